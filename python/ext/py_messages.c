/* py_messages.c - the library's lines in a Python process: sys.stderr and logging, through the
 * handler tprof._messages installs (docs/PYTHON.md, "Messages").
 *
 * The library writes its lines (util/msg.h) from any thread, often holding a lock of its own
 * (the session's, the log's), sometimes on a thread that holds the GIL. Calling Python there
 * could deadlock: sys.stderr.write may release the GIL, and the thread that takes it may wait for
 * the lock the writing thread holds. So the hook only queues the line and asks the interpreter
 * for a pending call; the lines reach the handler, in order, with the GIL held and no library
 * lock held:
 * - when an extension call that may print returns (tp_py_messages_deliver): the summary is on
 *   sys.stderr before prof.stop() returns, inside the caller's contextlib.redirect_stderr;
 * - otherwise at the main thread's next pending-call check (the writer thread's lines);
 * - and what Python cannot take goes to file descriptor 2, as before: a line the handler
 *   refused or raised on, every line while the interpreter finalizes, and the queue's rest at
 *   its end (Py_AtExit). No line is lost, none is written twice.
 * The queue is a lock-free stack taken whole (no lock a fork could leave held); a forked child
 * starts with it empty, as the lines queued belong to the parent, which delivers them. */
#include "tprof_py.h"

#include "util/msg.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if PY_VERSION_HEX >= 0x030D0000
#define py_finalizing() Py_IsFinalizing()
#else
#define py_finalizing() _Py_IsFinalizing()
#endif

typedef struct line {
    struct line *next;
    tp_msg_kind kind;
    size_t len;
    char text[];
} line;

static line *queue;       /* newest first; pushed by any thread, taken whole */
static int closed;        /* the interpreter ended: every line to fd 2 */
static PyObject *handler; /* handler(kind, text) -> bool; guarded by the GIL */
static int delivering;    /* a delivery is running (the handler's code may reach another) */
static int at_exit_set;   /* Py_AtExit and the fork handler registered */

/* Pushes l; 1 when the queue was empty. */
static int push(line *l) {
    line *head = __atomic_load_n(&queue, __ATOMIC_RELAXED);
    do
        l->next = head;
    while (!__atomic_compare_exchange_n(&queue, &head, l, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    return head == NULL;
}

/* Every queued line, oldest first, the queue left empty. */
static line *take_all(void) {
    line *l = __atomic_exchange_n(&queue, NULL, __ATOMIC_ACQUIRE), *fifo = NULL;
    while (l) {
        line *next = l->next;
        l->next = fifo;
        fifo = l;
        l = next;
    }
    return fifo;
}

static void to_fd2(const line *l) {
    fwrite(l->text, 1, l->len, stderr);
    fflush(stderr);
}

/* The queued lines to fd 2, in order (the interpreter cannot take them). */
static void drain_to_fd2(void) {
    for (line *l = take_all(), *next; l; l = next) {
        next = l->next;
        to_fd2(l);
        free(l);
    }
}

static int python_open(void) {
    return !__atomic_load_n(&closed, __ATOMIC_ACQUIRE) && Py_IsInitialized() && !py_finalizing();
}

static int run_pending(void *unused) {
    (void)unused;
    tp_py_messages_deliver();
    return 0;
}

/* The library's hook (util/msg.h): queues the line; -1 (stderr) when Python is gone. */
static int hook(tp_msg_kind kind, const char *text, size_t len) {
    if (!python_open()) {
        drain_to_fd2(); /* the earlier lines first */
        return -1;
    }
    line *l = malloc(sizeof(*l) + len);
    if (!l) return -1;
    l->kind = kind;
    l->len = len;
    memcpy(l->text, text, len);
    /* A full pending-call table leaves the line for the next delivery. */
    if (push(l)) (void)Py_AddPendingCall(run_pending, NULL);
    return 0;
}

/* l through the handler; 0 when it did not take it. Any exception is cleared. */
static int to_python(const line *l) {
    if (!handler || py_finalizing()) return 0;
    PyObject *text = PyUnicode_DecodeUTF8(l->text, (Py_ssize_t)l->len, "replace");
    PyObject *r = text ? PyObject_CallFunction(handler, "iO", (int)l->kind, text) : NULL;
    int ok = r && PyObject_IsTrue(r) == 1;
    Py_XDECREF(text);
    Py_XDECREF(r);
    PyErr_Clear();
    return ok;
}

void tp_py_messages_deliver(void) {
    if (delivering || !__atomic_load_n(&queue, __ATOMIC_ACQUIRE)) return;
    delivering = 1;
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc = PyErr_GetRaisedException(); /* the caller's error survives the handler */
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
#endif
    for (line *l; (l = take_all()) != NULL;) /* lines queued meanwhile come after */
        for (line *next; l; l = next) {
            next = l->next;
            if (!to_python(l)) to_fd2(l);
            free(l);
        }
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    PyErr_Restore(type, value, tb);
#endif
    delivering = 0;
}

/* In a forked child: the parent's lines are the parent's to deliver (their memory is left). */
static void forget_in_child(void) {
    __atomic_store_n(&queue, NULL, __ATOMIC_RELAXED);
}

/* The end of the interpreter: nothing more reaches Python. */
static void at_exit(void) {
    __atomic_store_n(&closed, 1, __ATOMIC_RELEASE);
    drain_to_fd2();
}

/* set_message_handler(fn): fn(kind, text) -> bool receives the library's lines from now on;
 * None: stderr again. */
static PyObject *py_set_message_handler(PyObject *mod, PyObject *fn) {
    (void)mod;
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "the message handler must be callable or None");
        return NULL;
    }
    if (!at_exit_set && Py_AtExit(at_exit) == 0)
        at_exit_set = pthread_atfork(NULL, NULL, forget_in_child) == 0;
    tp_py_messages_deliver(); /* the lines queued so far go to the handler that was asked for */
    Py_XSETREF(handler, fn == Py_None ? NULL : Py_NewRef(fn));
    tp_msg_set_hook(handler && at_exit_set ? hook : NULL);
    return Py_NewRef(Py_None);
}

static PyObject *py_deliver_messages(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    tp_py_messages_deliver();
    return Py_NewRef(Py_None);
}

PyMethodDef tp_py_messages_methods[] = {
    {"set_message_handler", py_set_message_handler, METH_O,
     "set_message_handler(fn, /)\n--\n\nfn(kind, text) -> bool takes the library's lines (kind: "
     "0 output, 1 warning, 2 error); None: stderr."},
    {"deliver_messages", py_deliver_messages, METH_NOARGS,
     "deliver_messages()\n--\n\nHands the lines queued by other threads to the handler now."},
    {NULL, NULL, 0, NULL},
};
