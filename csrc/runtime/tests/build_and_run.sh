#!/usr/bin/env bash
# Builds the simulated device runtime together with its test program and runs
# it. No PyTorch involved. Usage: csrc/runtime/tests/build_and_run.sh [--sanitize]
# (MYDEV_SANITIZE=1 in the environment does the same as --sanitize).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$root"

flags=(-std=c++17 -O1 -g -pthread -Wall -Wextra -Icsrc/runtime/include)
build_dir=build/runtime-tests
binary=runtime_test
if [[ "${1:-}" == "--sanitize" || ( $# -eq 0 && "${MYDEV_SANITIZE:-0}" == "1" ) ]]; then
  flags+=(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  binary=runtime_test_sanitized
  # The runtime's own SIGSEGV handler must see device-pointer faults, so ASan
  # must not claim SIGSEGV for itself.
  export ASAN_OPTIONS="handle_segv=0:allow_user_segv_handler=1:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
elif [[ $# -gt 0 ]]; then
  echo "usage: $0 [--sanitize]" >&2
  exit 2
fi

mkdir -p "$build_dir"
# Tests run in the order they are registered, which is the order of these
# files (devices_initialise_lazily must come before anything uses a device).
tests=(devices_and_memory_test streams_test faults_test main)
"${CXX:-g++}" "${flags[@]}" csrc/runtime/*.cpp $(printf "csrc/runtime/tests/%s.cpp " "${tests[@]}") -o "$build_dir/$binary"
"$build_dir/$binary"
