// The mydev simulated device runtime: a small C API in the spirit of the CUDA
// runtime. It knows nothing about PyTorch (no torch header may be included by
// anything under csrc/runtime) so that a vendor can swap it for a real driver
// without touching the PyTorch glue.
//
// Model:
//  * MYDEV_DEVICE_COUNT devices (default 2), each with MYDEV_DEVICE_MEMORY bytes
//    of device memory (default 4GiB; accepts "8GiB", "512MiB", "1048576").
//  * Device memory is a separate address space: a device pointer is an address
//    in a reserved, inaccessible (PROT_NONE) view of the device's arena. Host
//    code that dereferences it faults, and the fault handler prints a message
//    naming mydev before the process dies. Kernels reach device memory through
//    mydevKernelMapPointer, which is only allowed while a kernel runs.
//  * Each stream owns an ordered queue run by its own worker thread; launches
//    return before the work ran. MYDEV_LAUNCH_BLOCKING=1 makes every launch
//    and async copy synchronous.
//  * The current device is per thread (default 0).
//  * Every failing call returns an error code and leaves a thread-local message
//    that names the API call and the device (mydevGetLastErrorMessage). A
//    kernel that fails (mydevKernelFail) does not poison the device: its error
//    is returned once, by the next synchronizing call that covers it, naming the
//    kernel.
//  * After fork(), a child of a process that initialised the runtime gets
//    mydevErrorForkedChild from every call (the worker threads did not survive
//    the fork and the arenas are shared with the parent).
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mydevError {
  mydevSuccess = 0,
  mydevErrorInvalidValue = 1,        // bad argument (null out-pointer, bad kind, ...)
  mydevErrorInvalidDevice = 2,       // device index out of range
  mydevErrorMemoryAllocation = 3,    // out of device (or pinned host) memory
  mydevErrorInvalidDevicePointer = 4,// pointer is not (the start of) a live allocation
  mydevErrorNotReady = 5,            // query: work still pending
  mydevErrorLaunchFailure = 6,       // an asynchronous kernel failed (reported once)
  mydevErrorInvalidResourceHandle = 7,// bad stream / event handle, or event never recorded
  mydevErrorNotPermitted = 8,        // e.g. mapping device memory outside a kernel
  mydevErrorForkedChild = 9,         // runtime used in a forked child
  mydevErrorInitialization = 10,     // bad MYDEV_* configuration or mapping failure
} mydevError_t;

// Static name of an error code, e.g. "mydevErrorMemoryAllocation".
const char* mydevGetErrorName(mydevError_t error);
// Human-readable message of the last failing call on this thread: names the API
// call and the device, e.g. "mydevMalloc: out of memory on mydev:0: tried to
// allocate 1.00 GiB; 512.00 MiB of 4.00 GiB free". Empty string if none.
const char* mydevGetLastErrorMessage(void);

// ---- devices ---------------------------------------------------------------
typedef struct mydevDeviceProp {
  char name[128];              // "mydev simulated device"
  size_t totalGlobalMem;       // MYDEV_DEVICE_MEMORY
  int multiProcessorCount;     // number of host cores
  int major;                   // compute capability of the simulated device
  int minor;
} mydevDeviceProp;

// Never fails except in a forked child or with a bad MYDEV_DEVICE_COUNT.
mydevError_t mydevGetDeviceCount(int* count);
mydevError_t mydevSetDevice(int device);        // per thread
mydevError_t mydevGetDevice(int* device);       // per thread, default 0
mydevError_t mydevGetDeviceProperties(mydevDeviceProp* prop, int device);
// Waits for every stream of the current device; returns a pending kernel error.
mydevError_t mydevDeviceSynchronize(void);
// Free and total bytes of the current device's memory.
mydevError_t mydevMemGetInfo(size_t* free_bytes, size_t* total_bytes);
// Whether the device has been used (its arena mapped): the "primary context".
mydevError_t mydevDeviceIsInitialized(int device, int* initialized);

// ---- memory ----------------------------------------------------------------
// Device memory on the current device; 256-byte aligned. size 0 gives NULL.
mydevError_t mydevMalloc(void** dev_ptr, size_t size);
// Waits for the pointer's device to finish its work (like cudaFree), then
// releases the memory (and its physical pages) to the device.
mydevError_t mydevFree(void* dev_ptr);
// Page-locked ("pinned") host memory: host accessible, async copies from/to it
// do not stage.
mydevError_t mydevHostAlloc(void** host_ptr, size_t size);
mydevError_t mydevFreeHost(void* host_ptr);

typedef enum mydevMemoryType {
  mydevMemoryTypeUnregistered = 0,  // ordinary (pageable) host memory
  mydevMemoryTypeHost = 1,          // from mydevHostAlloc
  mydevMemoryTypeDevice = 2,        // inside a device's memory
} mydevMemoryType;

typedef struct mydevPointerAttributes {
  mydevMemoryType type;
  int device;           // device of a device pointer, else -1
  void* base;           // start of the allocation containing the pointer (or NULL)
  size_t size;          // size of that allocation (0 if unregistered; device sizes are rounded up to 256)
} mydevPointerAttributes;

// Interior pointers resolve to their allocation. Never faults.
mydevError_t mydevPointerGetAttributes(mydevPointerAttributes* attr, const void* ptr);
// Only the device whose memory holds ptr: takes no lock, for allocators' free
// paths. mydevErrorInvalidDevicePointer if ptr is not device memory.
mydevError_t mydevPointerGetDevice(int* device, const void* ptr);

typedef enum mydevMemcpyKind {
  mydevMemcpyHostToHost = 0,
  mydevMemcpyHostToDevice = 1,
  mydevMemcpyDeviceToHost = 2,
  mydevMemcpyDeviceToDevice = 3,   // also between two devices
} mydevMemcpyKind;

typedef struct mydevStream* mydevStream_t;   // NULL means the current device's default stream
typedef struct mydevEvent* mydevEvent_t;

// Synchronous copy: ordered on the default stream of the device involved
// (destination device for device-to-device), returns when the data arrived.
mydevError_t mydevMemcpy(void* dst, const void* src, size_t count, mydevMemcpyKind kind);
// Asynchronous copy ordered on `stream`. From pageable host memory the source is
// staged before returning (the caller may reuse it at once); to pageable host
// memory the call waits for completion. Pinned host memory is truly async.
// The kind is checked against the pointers (mydevErrorInvalidValue).
mydevError_t mydevMemcpyAsync(void* dst, const void* src, size_t count,
                              mydevMemcpyKind kind, mydevStream_t stream);
mydevError_t mydevMemsetAsync(void* dev_ptr, int value, size_t count, mydevStream_t stream);

// ---- streams ---------------------------------------------------------------
// Priorities: lower number = higher priority, like CUDA: [greatest, least] = [-1, 0].
mydevError_t mydevDeviceGetStreamPriorityRange(int* least_priority, int* greatest_priority);
mydevError_t mydevStreamCreate(mydevStream_t* stream);   // on the current device
mydevError_t mydevStreamCreateWithPriority(mydevStream_t* stream, int priority);
// Waits for the stream's work, then stops its worker. Default streams cannot be destroyed.
mydevError_t mydevStreamDestroy(mydevStream_t stream);
// The default stream of `device` (never NULL for a valid device).
mydevError_t mydevDeviceGetDefaultStream(int device, mydevStream_t* stream);
mydevError_t mydevStreamGetDevice(mydevStream_t stream, int* device);
mydevError_t mydevStreamGetPriority(mydevStream_t stream, int* priority);
// mydevSuccess if all work completed, mydevErrorNotReady if not; reports a pending kernel error.
mydevError_t mydevStreamQuery(mydevStream_t stream);
// Waits for all work queued so far; reports (and clears) a pending kernel error.
mydevError_t mydevStreamSynchronize(mydevStream_t stream);
// Work queued on `stream` after this call waits until `event` (its latest record) completed.
mydevError_t mydevStreamWaitEvent(mydevStream_t stream, mydevEvent_t event);

// ---- host waits --------------------------------------------------------------
// A thread that blocks until the device has done some work (a synchronization,
// a copy into pageable memory, a launch into a full queue; also a stream's
// worker at a wait queued by mydevStreamWaitEvent) calls `before` as it goes
// to sleep and `after` once it woke, on that thread, possibly while it holds
// a lock of the runtime's. An embedder whose kernels need a lock that a
// waiting thread may hold (an interpreter's global lock) releases it in
// `before` and takes it back in `after`. NULL for none; may be set before
// anything else. mydevGetHostWaitCallbacks gives the pair to an embedder's
// own waits for the device.
typedef void (*mydevHostWaitCallback)(void);
mydevError_t mydevSetHostWaitCallbacks(mydevHostWaitCallback before, mydevHostWaitCallback after);
mydevError_t mydevGetHostWaitCallbacks(mydevHostWaitCallback* before, mydevHostWaitCallback* after);

// ---- kernels ---------------------------------------------------------------
typedef void (*mydevKernelFn)(void* args);
typedef void (*mydevReleaseFn)(void* args);
// Queues fn(args) on `stream`. `name` (its first 63 characters are copied)
// identifies the kernel in errors.
// `release`, if not NULL, is called with args after the kernel ran, on a host
// thread: one that launches work on `stream` (finished kernels are released
// 64 at a time) or synchronizes with it (or at once if the launch itself
// fails), so that what the caller allocated for the kernel is freed on a host
// thread, never on the stream's worker.
mydevError_t mydevLaunchKernel(const char* name, mydevKernelFn fn, void* args,
                               mydevReleaseFn release, mydevStream_t stream);
// Launches like mydevLaunchKernel, with the kernel's arguments kept in the
// stream's launch queue, as CUDA copies a kernel's parameters at launch: the
// runtime lends args_size bytes (64-byte aligned) and calls
// construct(context, args) once, on this thread, to build the arguments
// there; release(args) must destroy them without freeing the bytes. A launch
// then allocates nothing, unless the queue's argument space is full, when the
// bytes come from the heap. construct runs while the stream's queue is locked
// and must not use the stream. It returns 0 on success; anything else means
// it failed: nothing is queued and the launch returns mydevErrorInvalidValue.
// A C++ exception thrown by construct leaves this call, with nothing queued.
typedef int (*mydevArgsConstructFn)(void* context, void* args);
mydevError_t mydevLaunchKernelWithArgs(const char* name, mydevKernelFn fn, size_t args_size,
                                       mydevArgsConstructFn construct, void* context, mydevReleaseFn release,
                                       mydevStream_t stream);
// Called from inside a running kernel: marks it failed with `message` (copied).
// The error is returned by the next synchronizing call covering the kernel as
// mydevErrorLaunchFailure with "kernel '<name>' failed on mydev:<d>: <message>".
void mydevKernelFail(const char* message);
// Translates a device pointer (of any device) into an address the running
// kernel may read and write. mydevErrorNotPermitted outside a kernel,
// mydevErrorInvalidDevicePointer if ptr is not device memory.
mydevError_t mydevKernelMapPointer(const void* dev_ptr, void** kernel_ptr);
// 1 when the calling thread is a stream worker running a kernel, else 0.
// Cheap enough for an allocator's hot path: no checks, no error state.
int mydevInKernel(void);

// ---- events ----------------------------------------------------------------
enum {
  mydevEventDefault = 0x0,          // timing enabled
  mydevEventBlockingSync = 0x1,     // mydevEventSynchronize sleeps at once instead of polling first
  mydevEventDisableTiming = 0x2,
};
mydevError_t mydevEventCreateWithFlags(mydevEvent_t* event, unsigned int flags);
mydevError_t mydevEventDestroy(mydevEvent_t event);
// Captures the work queued on `stream` so far; re-recording replaces the capture.
mydevError_t mydevEventRecord(mydevEvent_t event, mydevStream_t stream);
// mydevSuccess if completed (or never recorded), mydevErrorNotReady otherwise.
mydevError_t mydevEventQuery(mydevEvent_t event);
// Waits for completion; reports a pending kernel error of the recorded stream.
mydevError_t mydevEventSynchronize(mydevEvent_t event);
// Milliseconds between two completed, timing-enabled events of the same device.
mydevError_t mydevEventElapsedTime(float* ms, mydevEvent_t start, mydevEvent_t end);

// ---- activity tracing (what a profiler reads, as from CUPTI's activity API) -
typedef enum mydevActivityKind {
  mydevActivityKernel = 1,
  mydevActivityMemcpy = 2,
  mydevActivityMemset = 3,
} mydevActivityKind;
typedef struct mydevActivityRecord {
  mydevActivityKind kind;
  const char* name;          // the kernel's name, or "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memset"
  int device;
  uint64_t stream;           // mydevStreamGetId of the stream it ran on
  uint64_t correlation_id;   // the launching thread's external correlation id at launch (0: none)
  int64_t start_ns;          // on the system clock, in ns since the Unix epoch (as host profilers use)
  int64_t end_ns;
  int64_t launch_ns;         // when it was queued, on the same clock
  uint64_t launch_thread;    // the system id (gettid) of the thread that queued it
  uint64_t bytes;            // copies and memsets; 0 for kernels
  mydevMemcpyKind copy_kind; // copies only
} mydevActivityRecord;
// Starts (1) or stops (0) recording the work launched from now on. While it is
// off a launch costs one relaxed atomic load more.
mydevError_t mydevActivityEnable(int enable);
// Hands each record of work that finished since the last flush to
// consume(record, context) (the record lives for the call only) and forgets it.
typedef void (*mydevActivityConsumeFn)(const mydevActivityRecord* record, void* context);
mydevError_t mydevActivityFlush(mydevActivityConsumeFn consume, void* context);
// The calling thread's stack of external correlation ids; a launch recorded
// while it is not empty carries its top.
mydevError_t mydevActivityPushExternalCorrelationId(uint64_t id);
mydevError_t mydevActivityPopExternalCorrelationId(uint64_t* id);
// A number naming the stream in activity records, unique in the process.
mydevError_t mydevStreamGetId(mydevStream_t stream, uint64_t* id);

// ---- fault injection (to test a backend's error paths) -----------------------
typedef enum mydevFaultKind {
  mydevFaultKernelFailure = 1,  // the kernel does not run: it fails with "injected fault"
  mydevFaultKernelHang = 2,     // the kernel does not start until the fault is removed
  mydevFaultOutOfMemory = 3,    // device allocations fail with mydevErrorMemoryAllocation
} mydevFaultKind;
// For the kernel kinds, the `nth` launch from now (1: the next one) of a
// kernel named `name`, or whose name starts with `name` followed by '.'
// ("aten::add" covers "aten::add.out"), is affected. For
// mydevFaultOutOfMemory (`name` unused, may be NULL) the nth device
// allocation from now and every later one fail, until the fault is removed.
// MYDEV_INJECT_FAULT installs faults when the runtime initialises: a
// comma-separated list of "<name>[:<nth>]" (a kernel failure),
// "hang:<name>[:<nth>]" and "oom[:<nth>]". *id names the fault for
// mydevRemoveFault.
mydevError_t mydevInjectFault(mydevFaultKind kind, const char* name, int nth, int* id);
// Removes a fault that has not fired yet, or a hang that holds a kernel (which
// then runs).
mydevError_t mydevRemoveFault(int id);

#ifdef __cplusplus
}  // extern "C"
#endif
