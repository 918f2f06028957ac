/* cuvil-sdk instruction counter: a TCG plugin for qemu-aarch64 (user mode).
 *
 * QEMU has no instruction count for user-mode guests (-icount is system mode only), so
 * `run --board rpi5` loads this plugin: it counts the guest instructions that execute, and
 * records the count at each marker instruction the generated code executes. A marker is
 *
 *     movz xzr, #imm, lsl #48        (encoding 0xd2e0001f | imm << 5)
 *
 * a move into the zero register: a no-op on every aarch64 CPU, which no compiler emits. The
 * model marks imm = 0xffff before its first layer and imm = i after layer i; the harness
 * marks 0xfffe before a sample's input is quantized and 0xfffd after its outputs are ready
 * (sdk/templates/common/model.c.j2, targets/rpi5/harness.c.j2, CUVIL_INSN_MARKS).
 *
 * Counting: each translated block adds its instruction count to one 64-bit counter when it
 * starts (an inline add, cheap); a marker's callback subtracts the instructions of its block
 * that come after it, so each record is exact at the marker. One counter for all vCPUs:
 * counts are deterministic for single-threaded runs (--threads 1), which is what `run` uses.
 * They are guest instructions, not cycles of a Cortex-A76.
 *
 * Output: the plugin argument out=PATH names a text file; one line "mark <imm> <count>" per
 * executed marker, then "total <count>" at exit.
 *
 * Built by the SDK with the host compiler (sdk/runners/insn_count.py) against QEMU's plugin
 * API version 1 (QEMU 7.2 as in Debian 12, which does not ship qemu-plugin.h): the handful
 * of declarations used are restated below from that API; QEMU exports the functions.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* --- the subset of QEMU's plugin API (include/qemu/qemu-plugin.h, API version 1) --- */
typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* --- the counter ------------------------------------------------------------------- */
#define MARK_MASK 0xffe0001fu  /* MOVZ (64-bit), hw = 3, Rd = xzr; imm16 in bits 5..20 */
#define MARK_BITS 0xd2e0001fu

static uint64_t executed; /* instructions of every block entered so far */
static FILE *out;

/* userdata packs the marker's imm (low 16 bits) and how many instructions of its block follow it */
static void on_mark(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index;
    const uintptr_t packed = (uintptr_t)userdata;
    fprintf(out, "mark %u %" PRIu64 "\n", (unsigned)(packed & 0xffffu), executed - (uint64_t)(packed >> 16));
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    const size_t n = qemu_plugin_tb_n_insns(tb);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed, n);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint32_t word;
        if (qemu_plugin_insn_size(insn) != sizeof word) {
            continue;
        }
        memcpy(&word, qemu_plugin_insn_data(insn), sizeof word);
        if ((word & MARK_MASK) == MARK_BITS) {
            const uintptr_t packed = ((uintptr_t)(n - i - 1) << 16) | ((word >> 5) & 0xffffu);
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS, (void *)packed);
        }
    }
}

static void on_exit(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    fprintf(out, "total %" PRIu64 "\n", executed);
    fclose(out);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                                               int argc, char **argv)
{
    (void)info;
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            path = argv[i] + 4;
        }
    }
    if (path == NULL || (out = fopen(path, "w")) == NULL) {
        fprintf(stderr, "cuvil insn_count plugin: give a writable out=PATH\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_exit, NULL);
    return 0;
}
