// Host tasks: work that an agent outside the device does on a stream's behalf,
// as a network card writes device memory for a GPU (GPUDirect RDMA) while the
// GPU's stream waits for its completion flag. The stream holds the task's place
// in its order from when it begins until the agent ends it: later work on the
// stream, events recorded after it and synchronizations wait for the end. No
// stream worker runs it, so an agent that ends a task on its own thread wakes
// the stream's waiters directly, with no worker in between.
//
// A host task begins only on a stream with nothing pending, so its agent may
// start at once; the agent maps device memory with mydevHostTaskMapPointer
// until it calls mydevHostTaskEnd, which every begun task must reach (the
// stream and everything waiting on it hang until then). Injected kernel faults
// and activity records concern kernels and do not apply to host tasks.
#pragma once

#include <mydev/runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mydevHostTask* mydevHostTask_t;

// Begins a host task on `stream` (NULL: the current device's default stream),
// or returns mydevErrorNotReady, queueing nothing, while the stream has work
// pending.
mydevError_t mydevHostTaskBegin(mydevStream_t stream, mydevHostTask_t* task);
// The address at which the agent reaches device memory `dev_ptr` until the
// task ends.
mydevError_t mydevHostTaskMapPointer(mydevHostTask_t task, const void* dev_ptr, void** host_ptr);
// Ends the task, on any thread; the handle is invalid afterwards.
mydevError_t mydevHostTaskEnd(mydevHostTask_t task);

#ifdef __cplusplus
}
#endif
