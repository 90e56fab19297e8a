// Native kernels of the fused optimizer steps (torch.optim's fused=True for
// Adam, AdamW, SGD and Adagrad): one kernel per optimizer step, which runs
// ATen's fused CPU step over every parameter in device memory.
//
// The CPU step checks the list lengths but trusts each tensor's geometry; the
// lists are checked here, on the calling thread, tensor by tensor, so that a
// mismatch raises at the call instead of corrupting memory on the worker.
// Reading found_inf and the step counters is the kernel's business (they are
// device tensors), as it is on CUDA.
#include "NativeCall.h"

#include <ATen/CPUFunctions.h>
#include <torch/library.h>

#include <initializer_list>
#include <utility>

namespace torch_mydev::native {

namespace {

using at::Tensor;
using at::TensorList;
using OptionalTensor = std::optional<Tensor>;

// Every list in `states` pairs, index by index, with `params`: same length,
// and each state tensor has its parameter's shape and dtype. `optional_states`
// may also be empty (max_exp_avg_sqs without amsgrad, momentum buffers on the
// first SGD step).
void checkParameterLists(const char* op, TensorList params,
                         std::initializer_list<std::pair<const char*, TensorList>> states,
                         std::initializer_list<std::pair<const char*, TensorList>> optional_states = {}) {
  auto check = [&](const char* what, TensorList list) {
    TORCH_CHECK(list.size() == params.size(), op, ": expected ", params.size(), " ", what, " (one per parameter), got ",
                list.size());
    for (size_t i = 0; i < params.size(); ++i) {
      TORCH_CHECK(list[i].sizes() == params[i].sizes() && list[i].scalar_type() == params[i].scalar_type(), op, ": ",
                  what, "[", i, "] has shape ", list[i].sizes(), " and dtype ", list[i].scalar_type(),
                  ", but its parameter has shape ", params[i].sizes(), " and dtype ", params[i].scalar_type());
    }
  };
  for (const auto& [what, list] : states) {
    check(what, list);
  }
  for (const auto& [what, list] : optional_states) {
    if (!list.empty()) {
      check(what, list);
    }
  }
}

void checkStateSteps(const char* op, TensorList params, TensorList state_steps) {
  TORCH_CHECK(state_steps.size() == params.size(), op, ": expected ", params.size(),
              " state_steps (one per parameter), got ", state_steps.size());
  for (size_t i = 0; i < state_steps.size(); ++i) {
    TORCH_CHECK(state_steps[i].numel() == 1, op, ": state_steps[", i, "] must hold one value, got ",
                state_steps[i].numel());
  }
}

void checkAdam(const char* op, TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
               TensorList max_exp_avg_sqs, TensorList state_steps, bool amsgrad) {
  checkParameterLists(op, params, {{"grads", grads}, {"exp_avgs", exp_avgs}, {"exp_avg_sqs", exp_avg_sqs}});
  if (amsgrad) {
    checkParameterLists(op, params, {{"max_exp_avg_sqs", max_exp_avg_sqs}});
  } else {
    TORCH_CHECK(max_exp_avg_sqs.empty(), op, ": max_exp_avg_sqs must be empty without amsgrad");
  }
  checkStateSteps(op, params, state_steps);
}

// Each step takes its learning rate as a double or, in its .tensor_lr
// overload, as a tensor; one kernel template serves both, and Adam and AdamW,
// through the CPU function it calls.
template <typename LearningRate>
using AdamCpuStep = void (*)(TensorList, TensorList, TensorList, TensorList, TensorList, TensorList, LearningRate,
                             double, double, double, double, bool, bool, const OptionalTensor&, const OptionalTensor&);

template <const char* Name, typename LearningRate, AdamCpuStep<LearningRate> CpuStep>
void adamStep(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
              TensorList max_exp_avg_sqs, TensorList state_steps, LearningRate lr, double beta1, double beta2,
              double weight_decay, double eps, bool amsgrad, bool maximize, const OptionalTensor& grad_scale,
              const OptionalTensor& found_inf) {
  NativeCall call(Name, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, grad_scale,
                  found_inf);
  checkAdam(Name, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad);
  call.launch(
      [=](TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
          TensorList max_exp_avg_sqs, TensorList state_steps, const auto& lr, const OptionalTensor& grad_scale,
          const OptionalTensor& found_inf) {
        CpuStep(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2, weight_decay,
                eps, amsgrad, maximize, grad_scale, found_inf);
      },
      params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, grad_scale, found_inf);
}

template <const char* Name, typename LearningRate>
void sgdStep(TensorList params, TensorList grads, TensorList momentum_buffers, double weight_decay, double momentum,
             LearningRate lr, double dampening, bool nesterov, bool maximize, bool is_first_step,
             const OptionalTensor& grad_scale, const OptionalTensor& found_inf) {
  NativeCall call(Name, params, grads, momentum_buffers, lr, grad_scale, found_inf);
  checkParameterLists(Name, params, {{"grads", grads}}, {{"momentum_buffer_list", momentum_buffers}});
  call.launch(
      [=](TensorList params, TensorList grads, TensorList momentum_buffers, const auto& lr,
          const OptionalTensor& grad_scale, const OptionalTensor& found_inf) {
        at::cpu::_fused_sgd_(params, grads, momentum_buffers, weight_decay, momentum, lr, dampening, nesterov,
                             maximize, is_first_step, grad_scale, found_inf);
      },
      params, grads, momentum_buffers, lr, grad_scale, found_inf);
}

template <const char* Name, typename LearningRate>
void adagradStep(TensorList params, TensorList grads, TensorList state_sums, TensorList state_steps,
                 LearningRate lr, double lr_decay, double weight_decay, double eps, bool maximize,
                 const OptionalTensor& grad_scale, const OptionalTensor& found_inf) {
  NativeCall call(Name, params, grads, state_sums, state_steps, lr, grad_scale, found_inf);
  checkParameterLists(Name, params, {{"grads", grads}, {"state_sums", state_sums}});
  checkStateSteps(Name, params, state_steps);
  call.launch(
      [=](TensorList params, TensorList grads, TensorList state_sums, TensorList state_steps, const auto& lr,
          const OptionalTensor& grad_scale, const OptionalTensor& found_inf) {
        at::cpu::_fused_adagrad_(params, grads, state_sums, state_steps, lr, lr_decay, weight_decay, eps, maximize,
                                 grad_scale, found_inf);
      },
      params, grads, state_sums, state_steps, lr, grad_scale, found_inf);
}

constexpr char kAdam[] = "aten::_fused_adam_";
constexpr char kAdamTensorLr[] = "aten::_fused_adam_.tensor_lr";
constexpr char kAdamw[] = "aten::_fused_adamw_";
constexpr char kAdamwTensorLr[] = "aten::_fused_adamw_.tensor_lr";
constexpr char kSgd[] = "aten::_fused_sgd_";
constexpr char kSgdTensorLr[] = "aten::_fused_sgd_.tensor_lr";
constexpr char kAdagrad[] = "aten::_fused_adagrad_";
constexpr char kAdagradTensorLr[] = "aten::_fused_adagrad_.tensor_lr";

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_adam_", TORCH_FN((adamStep<kAdam, double, &at::cpu::_fused_adam_>)));
  m.impl("_fused_adam_.tensor_lr", TORCH_FN((adamStep<kAdamTensorLr, const Tensor&, &at::cpu::_fused_adam_>)));
  m.impl("_fused_adamw_", TORCH_FN((adamStep<kAdamw, double, &at::cpu::_fused_adamw_>)));
  m.impl("_fused_adamw_.tensor_lr", TORCH_FN((adamStep<kAdamwTensorLr, const Tensor&, &at::cpu::_fused_adamw_>)));
  m.impl("_fused_sgd_", TORCH_FN((sgdStep<kSgd, double>)));
  m.impl("_fused_sgd_.tensor_lr", TORCH_FN((sgdStep<kSgdTensorLr, const Tensor&>)));
  m.impl("_fused_adagrad_", TORCH_FN((adagradStep<kAdagrad, double>)));
  m.impl("_fused_adagrad_.tensor_lr", TORCH_FN((adagradStep<kAdagradTensorLr, const Tensor&>)));
}

}  // namespace torch_mydev::native
