// Copies into, out of and within mydev memory (_copy_from is where Tensor.copy_
// lands whenever a mydev tensor is involved). Bytes cross between host and
// device only through the runtime's memcpy; layout, dtype and broadcasting
// changes happen on the side that has a kernel for them (ATen's CPU copy on the
// host side, a copy kernel on the device side). Blocking semantics follow CUDA:
// non_blocking copies to or from pinned memory are asynchronous, everything
// else synchronizes the stream.
#include "DeviceTensorRef.h"
#include "DtypeProbe.h"
#include "DtypeSignatures.h"
#include "KernelLaunch.h"

#include "../core/Device.h"
#include "../core/Event.h"
#include "../core/HostAllocator.h"
#include "../core/Stream.h"
#include "../core/SyncDebug.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

namespace torch_mydev {

namespace {

bool isMydev(const at::Tensor& tensor) { return tensor.device().type() == c10::DeviceType::PrivateUse1; }

bool plainLayout(const at::Tensor& tensor) { return tensor.is_contiguous() && !tensor.is_conj() && !tensor.is_neg(); }

// Whether src's bytes are exactly dst's bytes.
bool bytewiseCopyable(const at::Tensor& dst, const at::Tensor& src) {
  return dst.scalar_type() == src.scalar_type() && dst.sizes() == src.sizes() && plainLayout(dst) &&
      plainLayout(src);
}

void copyKernel(const at::Tensor& dst, const at::Tensor& src, const MydevStream& stream) {
  static const char* const name = "aten::copy_";
  LaunchSignature signature(name, name);
  signature.add(dst);
  signature.add(src);
  const auto probe = [&] {
    return inPlaceRunsForDtypes(dst, src, [](at::Tensor self, const at::Tensor& other) { self.copy_(other); });
  };
  launchCheckingDtypes(signature, probe, [&](KernelWatch* watch) {
    launchKernel(
        name, stream,
        [dst_ref = describe(dst), src_ref = describe(src)] {
          KernelMemory memory;
          memory.map(dst_ref).copy_(memory.map(src_ref));
        },
        watch);
  });
}

at::Tensor emptyDeviceLike(const at::Tensor& dst, c10::DeviceIndex device) {
  return at::empty(dst.sizes(), dst.options().device(c10::Device(c10::DeviceType::PrivateUse1, device)));
}

void keepPinnedAlive(const at::Tensor& host, const MydevStream& stream) {
  const c10::DataPtr& data = host.storage().data_ptr();
  hostAllocator()->record_event(data.get(), data.get_context(), stream.unwrap());
}

// The runtime stages pageable sources and waits for pageable destinations, so
// only pinned host memory needs protecting while an async copy is in flight.
void finishHostCopy(const at::Tensor& host, const MydevStream& stream, bool non_blocking) {
  if (!non_blocking) {
    stream.synchronize();
  } else if (isPinned(host.data_ptr())) {
    keepPinnedAlive(host, stream);
  }
}

void copyHostToDevice(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  if (!non_blocking) {
    reportHostWait("a blocking copy from the host to mydev (Tensor.copy_, Tensor.to)");
  }
  const MydevStream stream = getCurrentMydevStream(dst.device().index());
  at::Tensor host = src;
  if (!bytewiseCopyable(dst, src)) {
    host = at::empty(dst.sizes(), src.options().dtype(dst.scalar_type()));
    host.copy_(src);
  }
  at::Tensor target = plainLayout(dst) ? dst : emptyDeviceLike(dst, dst.device().index());
  MYDEV_CHECK(mydevMemcpyAsync(target.data_ptr(), host.data_ptr(), host.nbytes(), mydevMemcpyHostToDevice,
                               stream.handle()));
  if (!target.is_same(dst)) {
    copyKernel(dst, target, stream);
  }
  finishHostCopy(host, stream, non_blocking);
}

void copyDeviceToHost(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  if (!non_blocking || !plainLayout(dst)) {
    reportHostWait("a blocking copy from mydev to the host (Tensor.copy_, Tensor.to, Tensor.cpu)");
  }
  const MydevStream stream = getCurrentMydevStream(src.device().index());
  at::Tensor source = src;
  if (!bytewiseCopyable(dst, src)) {
    source = emptyDeviceLike(dst, src.device().index());
    copyKernel(source, src, stream);
  }
  if (plainLayout(dst)) {
    MYDEV_CHECK(mydevMemcpyAsync(dst.data_ptr(), source.data_ptr(), source.nbytes(), mydevMemcpyDeviceToHost,
                                 stream.handle()));
    finishHostCopy(dst, stream, non_blocking);
    return;
  }
  at::Tensor host = at::empty(dst.sizes(), dst.options().memory_format(c10::MemoryFormat::Contiguous));
  MYDEV_CHECK(mydevMemcpyAsync(host.data_ptr(), source.data_ptr(), source.nbytes(), mydevMemcpyDeviceToHost,
                               stream.handle()));
  stream.synchronize();
  dst.copy_(host);
}

void copyDeviceToDevice(const at::Tensor& dst, const at::Tensor& src) {
  const MydevStream dst_stream = getCurrentMydevStream(dst.device().index());
  const bool same_device = src.device() == dst.device();
  const MydevStream src_stream = same_device ? dst_stream : getCurrentMydevStream(src.device().index());
  if (!same_device) {
    // The copy runs on the destination's stream once the source is ready, and
    // the source's stream waits for the copy before it may reuse the memory.
    MydevEvent source_ready;
    source_ready.record(src_stream);
    source_ready.block(dst_stream);
  }
  if (bytewiseCopyable(dst, src)) {
    MYDEV_CHECK(mydevMemcpyAsync(dst.data_ptr(), src.data_ptr(), src.nbytes(), mydevMemcpyDeviceToDevice,
                                 dst_stream.handle()));
  } else {
    copyKernel(dst, src, dst_stream);
  }
  if (!same_device) {
    MydevEvent copy_done;
    copy_done.record(dst_stream);
    copy_done.block(src_stream);
  }
}

at::Tensor copyFrom(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.defined() && dst.defined(), "copy_: both tensors must be defined");
  if (dst.numel() == 0) {
    return dst;
  }
  if (isMydev(dst) && isMydev(self)) {
    copyDeviceToDevice(dst, self);
  } else if (isMydev(dst)) {
    TORCH_CHECK(self.device().is_cpu(), "Copying from ", self.device(), " to mydev is not supported");
    copyHostToDevice(dst, self, non_blocking);
  } else {
    TORCH_CHECK(dst.device().is_cpu(), "Copying from mydev to ", dst.device(), " is not supported");
    copyDeviceToHost(dst, self, non_blocking);
  }
  return dst;
}

// Registered for copy_ itself (not only _copy_from, where ATen's generic copy_
// lands): copy_ passes through the Conjugate/Negative keys with the bits set,
// while _copy_from would first be materialized by those keys' fallback, which
// clones, which copies, which calls _copy_from again.
at::Tensor& copyInto(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  if (self.is_same(src)) {
    return self;
  }
  // Shape errors must raise here, not later inside the copy kernel.
  static_cast<void>(src.expand(self.sizes()));
  // The CPU's copy_ (a TensorIterator) refuses overlapping memory that a
  // memcpy on the stream would silently smear: x[1:].copy_(x[:-1]).
  if (isMydev(self)) {
    at::assert_no_internal_overlap(self);
    if (isMydev(src)) {
      at::assert_no_partial_overlap(self, src);
    }
  }
  copyFrom(src, self, non_blocking);
  return self;
}

at::Tensor copyFromAndResize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return copyFrom(self, dst, false);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("copy_", TORCH_FN(copyInto));
  m.impl("_copy_from", TORCH_FN(copyFrom));
  m.impl("_copy_from_and_resize", TORCH_FN(copyFromAndResize));
}

}  // namespace torch_mydev
