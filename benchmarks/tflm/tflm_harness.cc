// The peer's harness for bench_tflm_cortex_m.py: TensorFlow Lite Micro with CMSIS-NN, one int8
// inference of a .tflite model (tflm_model.h: the model as a byte array, written by the script)
// on an input pattern, timed by SysTick exactly as the cuvil firmware harness times its run
// (targets/cortex_m7/harness_common.c.j2: processor clock, wraps counted by the interrupt), under
// the same QEMU machine and start-up code. Writes tflm.txt: "instructions <n>", "arena <bytes>"
// and the output bytes. Built against a TFLM library made from the user's checkout; nothing of
// TFLM is kept in this repository.
#include <stdint.h>
#include <string.h>

#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"
#include "tflm_model.h"

extern "C" {
#include "semihost.h"
}

#ifndef TFLM_ARENA_BYTES
#define TFLM_ARENA_BYTES (160 * 1024)
#endif
#ifndef INSTRUCTIONS_PER_TICK_NUM
#define INSTRUCTIONS_PER_TICK_NUM 125u  // mps3-an547: 32 MHz SysTick under -icount shift=0 (31.25 per tick)
#define INSTRUCTIONS_PER_TICK_DEN 4u
#endif

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)

static volatile uint32_t systick_wraps;
extern "C" void SysTick_Handler(void) { systick_wraps++; }

static uint64_t systick_now(void) {
  uint32_t wraps, value;
  do {
    wraps = systick_wraps;
    value = SYST_CVR;
  } while (wraps != systick_wraps);
  return (uint64_t)wraps * 0x01000000u + (0x00FFFFFFu - value);
}

alignas(16) static uint8_t arena[TFLM_ARENA_BYTES];

static int put_line(int fd, const char *key, uint64_t value) {
  char text[48];
  size_t n = strlen(key);
  memcpy(text, key, n);
  text[n++] = ' ';
  char digits[24];
  int k = 0;
  do {
    digits[k++] = (char)('0' + value % 10u);
    value /= 10u;
  } while (value);
  while (k) text[n++] = digits[--k];
  text[n++] = '\n';
  return (int)sh_write(fd, text, n);
}

int main(void) {
  const tflite::Model *model = tflite::GetModel(tflm_model);
  tflite::MicroMutableOpResolver<16> resolver;  // a local: the start-up code runs no constructors, registers no destructors
  resolver.AddConv2D();
  resolver.AddDepthwiseConv2D();
  resolver.AddFullyConnected();
  resolver.AddAveragePool2D();
  resolver.AddMaxPool2D();
  resolver.AddAdd();
  resolver.AddSoftmax();
  resolver.AddReshape();
  resolver.AddQuantize();
  resolver.AddDequantize();
  resolver.AddMean();
  resolver.AddPad();
  resolver.AddRelu();
  tflite::MicroInterpreter interpreter(model, resolver, arena, sizeof arena);
  if (interpreter.AllocateTensors() != kTfLiteOk) return 2;
  TfLiteTensor *input = interpreter.input(0);
  for (size_t i = 0; i < input->bytes; i++) input->data.int8[i] = (int8_t)((i * 37u + 11u) & 0xFFu);
  SYST_CSR = 0u;
  SYST_RVR = 0x00FFFFFFu;
  SYST_CVR = 0u;
  systick_wraps = 0u;
  SYST_CSR = 7u;
  while (SYST_CVR == 0u) {
  }
  const uint64_t start = systick_now();
  const TfLiteStatus status = interpreter.Invoke();
  const uint64_t ticks = systick_now() - start;
  if (status != kTfLiteOk) return 3;
  int fd = sh_open("tflm.txt", SH_MODE_WB);
  if (fd < 0) return 4;
  if (put_line(fd, "instructions", ticks * INSTRUCTIONS_PER_TICK_NUM / INSTRUCTIONS_PER_TICK_DEN) ||
      put_line(fd, "arena", interpreter.arena_used_bytes()))
    return 5;
  TfLiteTensor *output = interpreter.output(0);
  for (size_t i = 0; i < output->bytes; i++) {
    if (put_line(fd, "output", (uint8_t)output->data.int8[i])) return 5;
  }
  return sh_close(fd);
}
