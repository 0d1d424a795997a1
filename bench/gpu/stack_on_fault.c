/* stack_on_fault.c - preloaded into a program that crashes on the GPU machine, prints the
 * crashing thread's stack to stderr and lets the signal kill the program as before. The lent
 * GPU machines have no gdb and cuda-gdb cannot start there ("The CUDA driver has hit an
 * internal error"), so bench/gpu/check.sh reruns a crash with LD_PRELOAD of this library and
 * turns the program's own frames into source lines with addr2line. */
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

static void on_fault(int sig) {
    static const char head[] = "stack_on_fault: fatal signal; stack of the faulting thread:\n";
    void *frames[64];
    /* backtrace is async-signal-safe once libgcc is loaded (see install), backtrace_symbols_fd
     * writes without allocating: what glibc's own crash reporters did */
    int n = backtrace(frames, 64); /* NOLINT(bugprone-signal-handler) */
    (void)!write(STDERR_FILENO, head, sizeof(head) - 1);
    backtrace_symbols_fd(frames, n, STDERR_FILENO); /* NOLINT(bugprone-signal-handler) */
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install(void) {
    void *warm[1];
    backtrace(warm, 1); /* loads libgcc's unwinder now, not inside the handler */
    signal(SIGSEGV, on_fault);
    signal(SIGBUS, on_fault);
    signal(SIGFPE, on_fault);
    signal(SIGILL, on_fault);
}
