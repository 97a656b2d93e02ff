/* _ringfeed.c - the CPython extension under the ringfeed package: a Loader
 * type over rf_loader and a Batch type that lends a batch slot's memory
 * through the buffer protocol. Compiled against include/ringfeed.h alone,
 * so rf_config's layout comes from the header, never from a copy, and so
 * do the names of its enum values (exported as ENUM_VALUES, ENUM_NAMES).
 *
 * Lifetimes: a Batch holds a strong reference to its Loader; a Loader's
 * rf_loader is destroyed only once no Batch of it is alive (close() with
 * batches out defers it to the last one), so a slot's memory never outlives
 * its loader. A released Batch refuses new buffer exports; with debug on,
 * its memory is a private copy that release turns PROT_NONE, so a stale
 * tensor faults instead of reading a recycled slot.
 *
 * Threads: every call below runs with the GIL, which is released around
 * rf_loader_create/next/destroy (they block). While one thread waits in
 * next() (in_next), the other calls on that loader raise RuntimeError
 * (the package's Loader serialises its calls with a lock), except close():
 * it wakes the waiter (rf_loader_interrupt), which raises Error and leaves
 * the destroy to whoever is last out (the waiter, or the last Batch).
 * Bad-sample reports arrive on the loader's threads and are queued under
 * report_mu, then handed to Python on the consumer's thread by
 * take_bad_samples().
 *
 * Signals: next() waits in slices of NEXT_POLL_NS, looking at signals
 * between them: Ctrl-C during a wait raises KeyboardInterrupt with no batch
 * taken. A batch taken when a signal handler raises (or that the package
 * gives back with hold_back() when its own code was interrupted) is kept in
 * `held` and returned by the next next(); state_save() and order() then
 * stand at it, so an interrupted next() leaves the loader where it was.
 * Create runs on a thread of its own (create_job) while the caller's thread
 * waits in slices of CREATE_POLL_NS, looking at signals between them:
 * Ctrl-C during a long create (a remote source's scan, a slow server)
 * calls it off (rf_loader_create_cancel) and raises KeyboardInterrupt once
 * the create thread has returned, leaving nothing behind. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ringfeed.h"   /* the library's public API, nothing private */
#include "rf_lists.h"   /* the lists of its fields, counters and codes: macros over it */

/* Whether the library linked in has the test-only hooks (the read delay the
 * Python tests use); meson passes it, as the library's build decided. */
#ifndef RINGFEED_TEST_HOOKS
#define RINGFEED_TEST_HOOKS 0
#endif

static PyObject *RfError;

/* ---- configuration: rf_config's fields by name -------------------------
 * From the one list of them (src/lists/rf_lists.h): those Python sets
 * through the config dict, the user's keywords and the package's own
 * (source, epochs, device). STR fields are paths: str, bytes or os.PathLike
 * (PyUnicode_FSConverter). */
static const rf_config_entry config_list[] = { RF_CONFIG_FIELDS(RF_CONFIG_ENTRY) };
#define NCONFIG_LIST (sizeof(config_list) / sizeof(config_list[0]))

/* @return : whether the config dict takes field e (and defaults() shows it). */
static int in_config_dict(const rf_config_entry *e)
{
	return (e->python == RF_PY_KEYWORD || e->python == RF_PY_PACKAGE) &&
	       e->kind != RF_FIELD_PTR && e->kind != RF_FIELD_RESERVED;
}

static PyObject *field_get(const rf_config *c, const rf_config_entry *f)
{
	const char *p = (const char *)c + f->offset;
	const float *v = (const float *)p;
	switch (f->kind) {
	case RF_FIELD_INT: return PyLong_FromLong(*(const int *)p);
	case RF_FIELD_U32: return PyLong_FromUnsignedLong(*(const uint32_t *)p);
	case RF_FIELD_U64: return PyLong_FromUnsignedLongLong(*(const uint64_t *)p);
	case RF_FIELD_SIZE: return PyLong_FromSize_t(*(const size_t *)p);
	case RF_FIELD_FLOAT: return PyFloat_FromDouble(*v);
	case RF_FIELD_FLOAT2: return Py_BuildValue("(dd)", (double)v[0], (double)v[1]);
	case RF_FIELD_FLOAT3: return Py_BuildValue("(ddd)", (double)v[0], (double)v[1], (double)v[2]);
	case RF_FIELD_STR:
		if (!*(const char *const *)p)
			Py_RETURN_NONE;
		return PyUnicode_DecodeFSDefault(*(const char *const *)p);
	case RF_FIELD_PTR:
	case RF_FIELD_RESERVED: /* not in the config dict (in_config_dict) */
		break;
	}
	Py_RETURN_NONE;
}

/* value as an integer: ints and what has __index__ (numpy's), never a float
 * or a string, which would be truncated or parsed. NULL with TypeError naming
 * the field. */
static PyObject *field_index(const rf_config_entry *f, PyObject *value)
{
	PyObject *x = PyNumber_Index(value);
	if (!x && PyErr_ExceptionMatches(PyExc_TypeError)) {
		PyErr_Clear();
		PyErr_Format(PyExc_TypeError, "%s: expected an integer, not %.100s", f->name,
			     Py_TYPE(value)->tp_name);
	}
	return x;
}

/* An integer field in [lo, hi] (unsigned fields: lo = 0); ValueError naming
 * the field otherwise. */
static int field_integer(const rf_config_entry *f, PyObject *value, long long lo,
			 unsigned long long hi, unsigned long long *out)
{
	PyObject *x = field_index(f, value);
	if (!x)
		return -1;
	int overflow;
	long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
	if (v == -1 && PyErr_Occurred()) {
		Py_DECREF(x);
		return -1;
	}
	if (overflow > 0 && lo == 0) { /* above LLONG_MAX: an unsigned 64-bit value? */
		unsigned long long u = PyLong_AsUnsignedLongLong(x);
		if (!(u == (unsigned long long)-1 && PyErr_Occurred()) && u <= hi) {
			Py_DECREF(x);
			*out = u;
			return 0;
		}
		PyErr_Clear();
	}
	if (overflow || v < lo || (v >= 0 && (unsigned long long)v > hi)) {
		/* v is -1 on an overflow: only overflow's sign says which way */
		if (lo == 0 && (overflow < 0 || (!overflow && v < 0)))
			PyErr_Format(PyExc_ValueError, "%s: %R is negative (it must be 0 or more)",
				     f->name, x);
		else
			PyErr_Format(PyExc_ValueError, "%s: %R is out of range (%lld to %llu)", f->name,
				     x, lo, hi);
		Py_DECREF(x);
		return -1;
	}
	Py_DECREF(x);
	*out = (unsigned long long)v;
	return 0;
}

/* Sets one field from value. A string (RF_FIELD_STR) points into a bytes object
 * appended to keep, which the caller holds until rf_loader_create() has
 * copied it. */
static int field_set(rf_config *c, const rf_config_entry *f, PyObject *value, PyObject *keep)
{
	char *p = (char *)c + f->offset;
	float *v = (float *)p;
	int n = f->kind == RF_FIELD_FLOAT2 ? 2 : 3;
	unsigned long long u;
	switch (f->kind) {
	case RF_FIELD_INT:
		if (field_integer(f, value, INT32_MIN, INT32_MAX, &u) < 0)
			return -1;
		*(int *)p = (int)(long long)u;
		return 0;
	case RF_FIELD_U32:
		if (field_integer(f, value, 0, UINT32_MAX, &u) < 0)
			return -1;
		*(uint32_t *)p = (uint32_t)u;
		return 0;
	case RF_FIELD_U64:
		if (field_integer(f, value, 0, UINT64_MAX, &u) < 0)
			return -1;
		*(uint64_t *)p = u;
		return 0;
	case RF_FIELD_SIZE:
		if (field_integer(f, value, 0, SIZE_MAX, &u) < 0)
			return -1;
		*(size_t *)p = (size_t)u;
		return 0;
	case RF_FIELD_FLOAT: {
		double x = PyFloat_AsDouble(value);
		if (x == -1.0 && PyErr_Occurred())
			return -1;
		*v = (float)x;
		return 0;
	}
	case RF_FIELD_FLOAT2:
	case RF_FIELD_FLOAT3: {
		PyObject *seq = PySequence_Fast(value, "expected a sequence of floats");
		if (!seq)
			return -1;
		if (PySequence_Fast_GET_SIZE(seq) != n) {
			PyErr_Format(PyExc_ValueError, "%s: expected %d values", f->name, n);
			Py_DECREF(seq);
			return -1;
		}
		for (int i = 0; i < n; i++) {
			double x = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
			if (x == -1.0 && PyErr_Occurred()) {
				Py_DECREF(seq);
				return -1;
			}
			v[i] = (float)x;
		}
		Py_DECREF(seq);
		return 0;
	}
	case RF_FIELD_STR: {
		if (value == Py_None) {
			*(const char **)p = NULL;
			return 0;
		}
		PyObject *b = NULL;
		if (!PyUnicode_FSConverter(value, &b)) {
			/* the same errors, naming the field: a wrong type, an embedded NUL */
			PyObject *type, *val, *tb;
			PyErr_Fetch(&type, &val, &tb);
			PyErr_NormalizeException(&type, &val, &tb);
			if (PyErr_GivenExceptionMatches(type, PyExc_TypeError))
				PyErr_Format(PyExc_TypeError, "%s: expected str, bytes or os.PathLike, "
					     "not %.100s", f->name, Py_TYPE(value)->tp_name);
			else
				PyErr_Format(type, "%s: %S", f->name, val ? val : Py_None);
			Py_XDECREF(type);
			Py_XDECREF(val);
			Py_XDECREF(tb);
			return -1;
		}
		int rc = PyList_Append(keep, b);
		*(const char **)p = PyBytes_AS_STRING(b);
		Py_DECREF(b);
		return rc;
	}
	case RF_FIELD_PTR:
	case RF_FIELD_RESERVED: /* not in the config dict (in_config_dict) */
		break;
	}
	return 0;
}

static PyObject *raise_rf(int code, const char *detail)
{
	PyObject *args = Py_BuildValue("(is)", code,
				       detail && *detail ? detail : rf_strerror(code));
	if (args) {
		PyErr_SetObject(RfError, args);
		Py_DECREF(args);
	}
	return NULL;
}

/* ---- ringfeed.Error: args (code, message) as always, and what a user reads ----
 * e.code (the negative errno or RF_E* code), e.name ("EDEADLK", "ECONFIG":
 * the module constant's name, errno's for errno values; None when unknown),
 * e.message, and str(e) the message alone (a sentence, not the tuple).
 * The class is a heap type made by PyErr_NewException; its __init__ and
 * __str__ are C functions bound as methods (PyInstanceMethod). */

/* ringfeed's own codes, by the names the module exports (ERROR_CODES), from
 * the one list of them */
static const rf_error_entry rf_codes[] = { RF_ERROR_CODES(RF_ERROR_ENTRY) };
#define NRF_CODES (sizeof(rf_codes) / sizeof(rf_codes[0]))

static PyObject *errno_names; /* errno.errorcode: {value: "EDEADLK", ...} */

/* New reference: code's name, or None. */
static PyObject *error_name(long code)
{
	for (size_t i = 0; i < NRF_CODES; i++)
		if (rf_codes[i].code == code)
			return PyUnicode_FromString(rf_codes[i].name);
	if (code == -EDEADLK) /* errno.errorcode says EDEADLOCK, its alias on Linux */
		return PyUnicode_FromString("EDEADLK");
	if (code < 0 && code > -4096 && errno_names) {
		PyObject *k = PyLong_FromLong(-code);
		PyObject *name = k ? PyDict_GetItemWithError(errno_names, k) : NULL;
		Py_XDECREF(k);
		if (name) {
			Py_INCREF(name);
			return name;
		}
		if (PyErr_Occurred())
			return NULL;
	}
	Py_RETURN_NONE;
}

/* Error.__init__(self, *args): args as given; code, name and message set
 * from (code, message), message rf_strerror(code) when only a code is
 * given; None where args do not say. */
static PyObject *Error_init(PyObject *unused, PyObject *args)
{
	(void)unused;
	Py_ssize_t n = PyTuple_GET_SIZE(args);
	if (n < 1) {
		PyErr_SetString(PyExc_TypeError, "Error.__init__ needs self");
		return NULL;
	}
	PyObject *self = PyTuple_GET_ITEM(args, 0);
	PyObject *rest = PyTuple_GetSlice(args, 1, n);
	if (!rest)
		return NULL;
	/* BaseException's own __init__: args */
	int rc = ((PyTypeObject *)PyExc_RuntimeError)->tp_init(self, rest, NULL);
	Py_DECREF(rest);
	if (rc < 0)
		return NULL;
	PyObject *code = Py_None, *message = Py_None, *name = NULL, *own = NULL;
	long c = 0;
	if (n >= 2 && PyLong_Check(PyTuple_GET_ITEM(args, 1))) {
		code = PyTuple_GET_ITEM(args, 1);
		c = PyLong_AsLong(code);
		if (c == -1 && PyErr_Occurred())
			PyErr_Clear(); /* out of long's range: no name */
		else if (!(name = error_name(c)))
			return NULL;
		if (n >= 3 && PyUnicode_Check(PyTuple_GET_ITEM(args, 2)))
			message = PyTuple_GET_ITEM(args, 2);
		else if (n == 2 && !(message = own = PyUnicode_FromString(rf_strerror((int)c)))) {
			Py_XDECREF(name);
			return NULL;
		}
	}
	rc = PyObject_SetAttrString(self, "code", code) < 0 ||
	     PyObject_SetAttrString(self, "name", name ? name : Py_None) < 0 ||
	     PyObject_SetAttrString(self, "message", message) < 0;
	Py_XDECREF(name);
	Py_XDECREF(own);
	if (rc)
		return NULL;
	Py_RETURN_NONE;
}

/* str(e): the message, or what BaseException says when there is none. */
static PyObject *Error_str(PyObject *unused, PyObject *args)
{
	(void)unused;
	PyObject *self;
	if (!PyArg_ParseTuple(args, "O", &self))
		return NULL;
	PyObject *message = PyObject_GetAttrString(self, "message");
	if (message && PyUnicode_Check(message))
		return message;
	Py_XDECREF(message);
	PyErr_Clear();
	return ((PyTypeObject *)PyExc_RuntimeError)->tp_str(self);
}

static PyMethodDef error_init_def = { "__init__", Error_init, METH_VARARGS, NULL };
static PyMethodDef error_str_def = { "__str__", Error_str, METH_VARARGS, NULL };

/* The Error class, with its methods and attributes' defaults in its dict.
 * @return : a new reference, or NULL with an exception set. */
static PyObject *make_error_class(void)
{
	PyObject *dict = PyDict_New(), *cls = NULL;
	const PyMethodDef *defs[] = { &error_init_def, &error_str_def };
	for (size_t i = 0; dict && i < 2; i++) {
		PyObject *f = PyCFunction_New((PyMethodDef *)defs[i], NULL);
		PyObject *m = f ? PyInstanceMethod_New(f) : NULL;
		int bad = !m || PyDict_SetItemString(dict, defs[i]->ml_name, m) < 0;
		Py_XDECREF(f);
		Py_XDECREF(m);
		if (bad)
			goto done;
	}
	if (!dict || PyDict_SetItemString(dict, "code", Py_None) < 0 ||
	    PyDict_SetItemString(dict, "name", Py_None) < 0 ||
	    PyDict_SetItemString(dict, "message", Py_None) < 0)
		goto done;
	cls = PyErr_NewExceptionWithDoc(
		"ringfeed.Error",
		"An error from the loader. e.code: the negative errno value or ringfeed code\n"
		"(ringfeed.ECONFIG, ...; ringfeed.ERROR_CODES names them all); e.name: its\n"
		"name (\"ECONFIG\", \"EDEADLK\"); e.message: what went wrong, also str(e).\n"
		"e.args is (code, message).",
		PyExc_RuntimeError, dict);
done:
	Py_XDECREF(dict);
	return cls;
}

/* ---- bad-sample reports, queued from the loader's threads ---- */

#define REPORTS_MAX 1024

struct report {
	char path[512];
	char reason[256];
	int err;
};

struct reports {
	pthread_mutex_t mu;   /* guards everything below */
	struct report q[REPORTS_MAX];
	unsigned n;           /* queued */
	uint64_t dropped;     /* reports beyond REPORTS_MAX before the consumer took them */
};

static void on_bad(void *user, const char *path, int err, const char *reason)
{
	struct reports *r = user;
	pthread_mutex_lock(&r->mu);
	if (r->n < REPORTS_MAX) {
		struct report *x = &r->q[r->n++];
		snprintf(x->path, sizeof(x->path), "%s", path ? path : "");
		snprintf(x->reason, sizeof(x->reason), "%s", reason ? reason : "");
		x->err = err;
	} else {
		r->dropped++;
	}
	pthread_mutex_unlock(&r->mu);
}

/* ---- Loader ---- */

typedef struct {
	PyObject_HEAD
	rf_loader *l;          /* NULL once destroyed */
	struct reports *reports;
	Py_ssize_t batches_alive; /* Batch objects not yet deallocated */
	int closing;           /* close() asked while batches were alive or next() waited */
	int in_next;           /* a thread waits in next() with the GIL released */
	rf_batch *held;        /* taken from the loader, not handed out yet: the next
	                        * next() returns it (see "Signals" above) */
	int debug;             /* batches are guarded copies (see Batch) */
	pid_t pid;             /* the process that created l: in a fork()ed child
	                        * every call raises the forked error (RF_EFORKED) */
} LoaderObject;

/* How long next() waits without looking at signals and close(). */
#define NEXT_POLL_NS (50 * 1000 * 1000ull)

typedef struct {
	PyObject_HEAD
	LoaderObject *owner;   /* strong reference */
	rf_batch *b;           /* NULL once released */
	uint8_t *guard;        /* debug: private copy of the data, PROT_NONE once released */
	size_t guard_len;
	Py_ssize_t exports;    /* live buffer exports (informational) */
	/* copied at next(): readable after release */
	uint64_t index;
	uint32_t epoch, count, height, width, channels;
	int dtype, layout, device_dtype, device_layout;
	size_t sample_bytes, device_sample_bytes;
	PyObject *labels;      /* bytes: count int32 */
	PyObject *ids;         /* bytes: count uint64 */
	PyObject *raw;         /* raw mode (cfg.raw): a tuple of each sample's bytes,
	                        * copied; None otherwise */
	PyObject *fields;      /* cfg.fields: a tuple of (name, bytes, offsets, present)
	                        * per field (offsets count + 1 uint64, present count
	                        * uint8), copied: a caption outlives its slot */
} BatchObject;

static PyTypeObject LoaderType, BatchType;
static PyObject *batch_fields(const rf_batch *b);
static PyObject *batch_raw(const rf_batch *b);

/* A create run on a thread of its own, so that the caller's thread can
 * look at signals while it runs; `cancel` calls it off. */
#define CREATE_POLL_NS 100000000L
typedef struct create_job {
	const rf_config *cfg;
	rf_loader *l;
	int rc;
	volatile int cancel;   /* set by the waiting thread, read by create */
	int done;              /* under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char msg[1024];
} create_job;

static void *create_main(void *arg)
{
	create_job *j = arg;
	j->rc = rf_loader_create_cancel(&j->l, j->cfg, &j->cancel, j->msg, sizeof(j->msg));
	pthread_mutex_lock(&j->mu);
	j->done = 1;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

/* Creates the loader, seeing signals meanwhile. @return : as
 * rf_loader_create(), with *l and msg; -ECANCELED with a Python exception
 * set when a signal handler raised (nothing is left behind). */
static int create_watching_signals(const rf_config *cfg, rf_loader **l, char *msg, size_t len)
{
	create_job j = { .cfg = cfg };
	pthread_mutex_init(&j.mu, NULL);
	pthread_cond_init(&j.cv, NULL);
	pthread_t t;
	if (pthread_create(&t, NULL, create_main, &j)) { /* no thread: create here, deaf */
		int rc;
		Py_BEGIN_ALLOW_THREADS
		rc = rf_loader_create(l, cfg, msg, len);
		Py_END_ALLOW_THREADS
		pthread_mutex_destroy(&j.mu);
		pthread_cond_destroy(&j.cv);
		return rc;
	}
	int raised = 0;
	for (;;) {
		int done;
		Py_BEGIN_ALLOW_THREADS
		pthread_mutex_lock(&j.mu);
		if (!j.done) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += CREATE_POLL_NS;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&j.cv, &j.mu, &ts);
		}
		done = j.done;
		pthread_mutex_unlock(&j.mu);
		Py_END_ALLOW_THREADS
		if (done)
			break;
		/* a handler that raised (Ctrl-C): call create off, and wait for
		 * it to return (soon) so that nothing outlives this call */
		if (!raised && PyErr_CheckSignals() < 0) {
			raised = 1;
			__atomic_store_n(&j.cancel, 1, __ATOMIC_RELAXED);
		}
	}
	pthread_join(t, NULL);
	pthread_mutex_destroy(&j.mu);
	pthread_cond_destroy(&j.cv);
	if (raised) {
		if (j.l) {
			Py_BEGIN_ALLOW_THREADS
			rf_loader_destroy(j.l);
			Py_END_ALLOW_THREADS
		}
		*l = NULL;
		return -ECANCELED;
	}
	*l = j.l;
	snprintf(msg, len, "%s", j.msg);
	return j.rc;
}

static void loader_destroy_now(LoaderObject *self)
{
	rf_loader *l = self->l;
	self->l = NULL;
	self->held = NULL; /* its slot goes with the loader */
	if (l) {
		Py_BEGIN_ALLOW_THREADS
		rf_loader_destroy(l);
		Py_END_ALLOW_THREADS
	}
}

static int Loader_init(LoaderObject *self, PyObject *args, PyObject *kw)
{
	PyObject *cfgdict;
	int debug = 0;
	Py_buffer state = { 0 };
	PyObject *keep = NULL;
	static char *kwlist[] = { "config", "resume_state", "debug", NULL };
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|z*p", kwlist, &PyDict_Type, &cfgdict,
					 &state, &debug))
		return -1;
	if (self->l) {
		PyErr_SetString(PyExc_RuntimeError, "Loader already initialized");
		goto fail;
	}
	rf_config cfg;
	rf_config_default(&cfg);
	keep = PyList_New(0); /* the paths' bytes, until create copied them */
	if (!keep)
		goto fail;
	PyObject *key, *value;
	Py_ssize_t pos = 0;
	while (PyDict_Next(cfgdict, &pos, &key, &value)) {
		const char *name = PyUnicode_AsUTF8(key);
		if (!name)
			goto fail;
		size_t i = 0;
		while (i < NCONFIG_LIST && (strcmp(config_list[i].name, name) != 0 ||
					    !in_config_dict(&config_list[i])))
			i++;
		if (i == NCONFIG_LIST) {
			PyErr_Format(PyExc_TypeError, "unknown config field '%s'", name);
			goto fail;
		}
		if (field_set(&cfg, &config_list[i], value, keep) < 0)
			goto fail;
	}
	if (!self->reports) {
		self->reports = PyMem_RawCalloc(1, sizeof(*self->reports));
		if (!self->reports) {
			PyErr_NoMemory();
			goto fail;
		}
		pthread_mutex_init(&self->reports->mu, NULL);
	}
	cfg.on_sample_error = on_bad;
	cfg.user = self->reports;
	if (state.buf) {
		cfg.resume_state = state.buf;
		cfg.resume_state_len = (size_t)state.len;
	}
	self->debug = debug;

	char msg[1024] = "";
	rf_loader *l = NULL;
	int rc;
	rc = create_watching_signals(&cfg, &l, msg, sizeof(msg));
	if (rc < 0) {
		if (!PyErr_Occurred()) /* else a signal handler's exception stands */
			raise_rf(rc, msg);
		goto fail;
	}
	self->l = l;
	self->pid = getpid();
	if (state.buf)
		PyBuffer_Release(&state);
	Py_DECREF(keep);
	return 0;
fail:
	if (state.buf)
		PyBuffer_Release(&state);
	Py_XDECREF(keep);
	return -1;
}

static void Loader_dealloc(LoaderObject *self)
{
	loader_destroy_now(self);
	if (self->reports) {
		pthread_mutex_destroy(&self->reports->mu);
		PyMem_RawFree(self->reports);
	}
	Py_TYPE(self)->tp_free((PyObject *)self);
}

/* After close(): destroys the C loader once nothing uses it any more. */
static void loader_destroy_if_unused(LoaderObject *self)
{
	if (self->closing && self->batches_alive == 0 && !self->in_next)
		loader_destroy_now(self);
}

/* Raises the forked error when this process is a fork() of the one that
 * created self's loader: its threads, ring and locks stayed in the parent,
 * and the C calls would return RF_EFORKED and fill nothing. @return : 1
 * when it raised. */
static int raise_if_forked(LoaderObject *self)
{
	if (!self->l || self->pid == getpid())
		return 0;
	char msg[256];
	snprintf(msg, sizeof(msg), "this loader belongs to process %ld, and this process (%ld) "
		 "is a fork() of it: a loader does not survive fork(); create one in this process",
		 (long)self->pid, (long)getpid());
	raise_rf(RF_EFORKED, msg);
	return 1;
}

static int loader_open(LoaderObject *self)
{
	if (!self->l || self->closing) {
		raise_rf(-EBADF, "the loader is closed");
		return 0;
	}
	if (raise_if_forked(self))
		return 0;
	if (self->in_next) {
		PyErr_SetString(PyExc_RuntimeError, "another thread is in next() on this loader: "
				"one call at a time (ringfeed.Loader serialises them)");
		return 0;
	}
	return 1;
}

/* Copies the batch's data into a private mapping (debug mode). */
static int guard_copy(BatchObject *bo)
{
	rf_batch *b = bo->b;
	size_t len = b->sample_bytes ? (size_t)b->count * b->sample_bytes : b->bytes;
	if (len == 0)
		return 0;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		PyErr_SetFromErrno(PyExc_OSError);
		return -1;
	}
	memcpy(m, b->data, len);
	bo->guard = m;
	bo->guard_len = len;
	return 0;
}

/* A Batch over b; on failure b is given back to the loader. */
static PyObject *wrap_batch(LoaderObject *self, rf_batch *b)
{
	BatchObject *bo = PyObject_New(BatchObject, &BatchType);
	if (!bo) {
		rf_batch_release(self->l, b);
		return NULL;
	}
	Py_INCREF(self);
	bo->owner = self;
	self->batches_alive++;
	bo->b = b;
	bo->guard = NULL;
	bo->guard_len = 0;
	bo->exports = 0;
	bo->index = b->index;
	bo->epoch = b->epoch;
	bo->count = b->count;
	bo->height = b->height;
	bo->width = b->width;
	bo->channels = b->channels;
	bo->dtype = b->dtype;
	bo->layout = b->layout;
	bo->device_dtype = b->device_dtype;
	bo->device_layout = b->device_layout;
	bo->sample_bytes = b->sample_bytes;
	bo->device_sample_bytes = b->device_sample_bytes;
	bo->labels = PyBytes_FromStringAndSize((const char *)b->labels,
					       (Py_ssize_t)b->count * (Py_ssize_t)sizeof(int32_t));
	bo->ids = PyBytes_FromStringAndSize((const char *)b->ids,
					    (Py_ssize_t)b->count * (Py_ssize_t)sizeof(uint64_t));
	bo->fields = batch_fields(b);
	bo->raw = batch_raw(b);
	if (!bo->labels || !bo->ids || !bo->fields || !bo->raw || (self->debug && !b->device_data && guard_copy(bo) < 0)) {
		Py_DECREF(bo);
		return NULL;
	}
	return (PyObject *)bo;
}

/* Keeps bo's slot in self->held for the next next(); bo reads as released. */
static void hold_back(LoaderObject *self, BatchObject *bo)
{
	if (!bo->b || self->held)
		return;
	self->held = bo->b;
	bo->b = NULL;
	if (bo->guard)
		mprotect(bo->guard, bo->guard_len, PROT_NONE);
}

/* Loader.next() -> Batch, or None at the end of the stream. */
static PyObject *Loader_next(LoaderObject *self, PyObject *unused)
{
	(void)unused;
	if (!loader_open(self))
		return NULL;
	rf_batch *b = self->held;
	if (b) {
		self->held = NULL;
		return wrap_batch(self, b);
	}
	int rc;
	self->in_next = 1;
	for (;;) {
		Py_BEGIN_ALLOW_THREADS
		rc = rf_loader_next_timeout(self->l, &b, NEXT_POLL_NS);
		Py_END_ALLOW_THREADS
		if ((rc != -ETIMEDOUT && rc != -EINTR) || self->closing)
			break;
		/* nothing taken: Ctrl-C raises here and loses nothing */
		if (PyErr_CheckSignals() < 0) {
			self->in_next = 0;
			return NULL;
		}
	}
	self->in_next = 0;
	if (self->closing) { /* close() from another thread woke us */
		if (rc == 0)
			rf_batch_release(self->l, b);
		loader_destroy_if_unused(self);
		return raise_rf(-ECANCELED, "the loader was closed while next() waited");
	}
	if (rc == RF_EOF)
		Py_RETURN_NONE;
	if (rc < 0)
		return raise_rf(rc, rf_loader_error(self->l));
	PyObject *bo = wrap_batch(self, b);
	/* a signal that came with the batch: its handler runs now, and the
	 * batch waits for the next call instead of being dropped */
	if (bo && PyErr_CheckSignals() < 0) {
		hold_back(self, (BatchObject *)bo);
		Py_DECREF(bo);
		return NULL;
	}
	return bo;
}

/* Loader.hold_back(batch): batch (just returned by next(), unreleased) is
 * returned again by the next next(); for the package, when its own code
 * was interrupted between next() and handing the batch out. */
static PyObject *Loader_hold_back(LoaderObject *self, PyObject *arg)
{
	if (!PyObject_TypeCheck(arg, &BatchType) || ((BatchObject *)arg)->owner != self) {
		PyErr_SetString(PyExc_ValueError, "hold_back: not a batch of this loader");
		return NULL;
	}
	if (!self->held && self->l && !self->closing)
		hold_back(self, (BatchObject *)arg);
	Py_RETURN_NONE;
}

static PyObject *Loader_state_save(LoaderObject *self, PyObject *unused)
{
	(void)unused;
	if (!loader_open(self))
		return NULL;
	uint8_t buf[RF_STATE_MAX_BYTES];
	int n = rf_loader_state_save(self->l, buf, sizeof(buf));
	if (n < 0)
		return raise_rf(n, "cannot save the state now (in_order = 0 with a gap)");
	if (self->held) { /* the position of the batch the next next() returns */
		rf_state_info x;
		char msg[256] = "";
		int rc = rf_state_parse(buf, (size_t)n, &x, msg, sizeof(msg));
		if (rc == 0 && x.next_batch != self->held->index + 1) {
			rc = -EAGAIN;
			snprintf(msg, sizeof(msg), "cannot save the state now: the batch held back "
				 "by an interrupted next() is not the last one delivered");
		}
		if (rc == 0)
			rc = rf_state_seek(buf, (size_t)n, self->held->index, msg, sizeof(msg));
		if (rc < 0)
			return raise_rf(rc, msg);
	}
	return PyBytes_FromStringAndSize((const char *)buf, n);
}

/* The first batch of the held batch's epoch, when that is the epoch before
 * the loader's (a state moved back to it knows, rest of an epoch included);
 * o->epoch_first_batch if the state cannot be had. */
static uint64_t held_epoch_first_batch(LoaderObject *self, const rf_order_info *o)
{
	uint8_t buf[RF_STATE_MAX_BYTES];
	rf_state_info x;
	int n = rf_loader_state_save(self->l, buf, sizeof(buf));
	if (n < 0 || rf_state_seek(buf, (size_t)n, self->held->index, NULL, 0) ||
	    rf_state_parse(buf, (size_t)n, &x, NULL, 0))
		return o->epoch_first_batch;
	return x.epoch_first_batch;
}

static PyObject *Loader_order(LoaderObject *self, PyObject *unused)
{
	(void)unused;
	if (!loader_open(self))
		return NULL;
	rf_order_info o;
	int rc = rf_loader_order(self->l, &o);
	if (rc < 0)
		return raise_rf(rc, rf_loader_error(self->l));
	if (self->held) { /* the held batch comes next */
		o.next_batch--;
		if (o.next_batch < o.epoch_first_batch) /* from the epoch before: ask a state */
			o.epoch_first_batch = held_epoch_first_batch(self, &o);
	}
	return Py_BuildValue("{s:i,s:I,s:I,s:s,s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
			     "sampler", (int)o.sampler, "rank", o.rank, "world_size",
			     o.world_size, "rank_source", o.rank_source, "dataset_samples",
			     (unsigned long long)o.dataset_samples, "epoch_samples",
			     (unsigned long long)o.epoch_samples, "rank_samples",
			     (unsigned long long)o.rank_samples, "batches_per_epoch",
			     (unsigned long long)o.batches_per_epoch, "next_batch",
			     (unsigned long long)o.next_batch, "total_batches",
			     (unsigned long long)o.total_batches, "epoch_first_batch",
			     (unsigned long long)o.epoch_first_batch);
}

static PyObject *Loader_stats(LoaderObject *self, PyObject *unused)
{
	(void)unused;
	if (!loader_open(self))
		return NULL;
	rf_stats s;
	int rc = rf_loader_stats(self->l, &s);
	if (rc < 0)
		return raise_rf(rc, rf_loader_error(self->l));
	if (self->held) { /* not delivered yet */
		s.batches--;
		s.samples -= self->held->count;
		s.replaced -= self->held->replaced;
	}
	/* every counter of the list of them (src/lists/rf_lists.h): counts by
	 * name, times in seconds under their key (NAME_s), the paths in use by
	 * name; and ns_consumer_wait as before (consumer_wait_s too) */
	static const rf_stat_entry list[] = { RF_STATS_FIELDS(RF_STAT_ENTRY) };
	PyObject *d = PyDict_New();
	for (size_t i = 0; d && i < sizeof(list) / sizeof(list[0]); i++) {
		const rf_stat_entry *e = &list[i];
		uint64_t x = e->kind == RF_STAT_RESERVED ? 0 : rfi_stat_value(&s, e);
		const char *name = NULL;
		PyObject *v = NULL;
		switch (e->kind) {
		case RF_STAT_COUNT: v = PyLong_FromUnsignedLongLong(x); break;
		case RF_STAT_TIME: v = PyFloat_FromDouble((double)x * 1e-9); break;
		case RF_STAT_IO_PATH:
		case RF_STAT_DECODE:
			name = rf_enum_name(e->kind == RF_STAT_IO_PATH ? RF_ENUM_IO_PATH : RF_ENUM_DECODE,
					    (int)x);
			v = PyUnicode_FromString(name ? name : "?");
			break;
		case RF_STAT_RESERVED: continue;
		}
		if (!v || PyDict_SetItemString(d, e->key, v) < 0)
			Py_CLEAR(d);
		Py_XDECREF(v);
	}
	PyObject *ns_wait = d ? PyLong_FromUnsignedLongLong(s.ns_consumer_wait) : NULL;
	if (d && (!ns_wait || PyDict_SetItemString(d, "ns_consumer_wait", ns_wait) < 0))
		Py_CLEAR(d);
	Py_XDECREF(ns_wait);
	return d;
}

/* Loader.class_names() -> [str]: rf_loader_class_name() of each label
 * (empty when the source names no classes). */
static PyObject *Loader_class_names(LoaderObject *self, PyObject *unused)
{
	(void)unused;
	if (!loader_open(self))
		return NULL;
	int n = rf_loader_class_count(self->l);
	if (n < 0)
		return raise_rf(n, NULL);
	PyObject *list = PyList_New(n);
	for (int i = 0; list && i < n; i++) {
		PyObject *name = PyUnicode_DecodeFSDefault(rf_loader_class_name(self->l, i));
		if (!name)
			Py_CLEAR(list);
		else
			PyList_SET_ITEM(list, i, name);
	}
	return list;
}

/* Loader.sample_name(id) -> str: rf_loader_sample_name(). */
static PyObject *Loader_sample_name(LoaderObject *self, PyObject *arg)
{
	if (!loader_open(self))
		return NULL;
	unsigned long long id = PyLong_AsUnsignedLongLong(arg);
	if (id == (unsigned long long)-1 && PyErr_Occurred()) {
		if (PyErr_ExceptionMatches(PyExc_OverflowError)) { /* negative, or past 2^64 */
			PyErr_Clear();
			PyErr_Format(PyExc_IndexError, "sample id %R is not a sample of this loader's "
				     "index", arg);
		}
		return NULL;
	}
	char small[512];
	int n = rf_loader_sample_name(self->l, id, small, sizeof(small));
	if (n == -ERANGE) {
		PyErr_Format(PyExc_IndexError, "sample id %llu is not a sample of this loader's index "
			     "(ids 0 to samples_total - 1)", id);
		return NULL;
	}
	if (n < 0)
		return raise_rf(n, NULL);
	if ((size_t)n < sizeof(small))
		return PyUnicode_DecodeFSDefaultAndSize(small, n);
	char *big = PyMem_Malloc((size_t)n + 1);
	if (!big)
		return PyErr_NoMemory();
	rf_loader_sample_name(self->l, id, big, (size_t)n + 1);
	PyObject *name = PyUnicode_DecodeFSDefaultAndSize(big, n);
	PyMem_Free(big);
	return name;
}

/* -> ([(path, err, reason), ...], dropped): the reports queued since the last call. */
static PyObject *Loader_take_bad_samples(LoaderObject *self, PyObject *unused)
{
	(void)unused;
	if (raise_if_forked(self)) /* a parent's thread may hold r->mu: never wait on it */
		return NULL;
	struct reports *r = self->reports;
	PyObject *list = PyList_New(0);
	if (!list || !r)
		return list;
	pthread_mutex_lock(&r->mu);
	unsigned n = r->n;
	uint64_t dropped = r->dropped;
	struct report *copy = n ? PyMem_RawMalloc(n * sizeof(*copy)) : NULL;
	if (copy)
		memcpy(copy, r->q, n * sizeof(*copy));
	if (copy || n == 0) {
		r->n = 0;
		r->dropped = 0;
	}
	pthread_mutex_unlock(&r->mu);
	if (n && !copy) {
		Py_DECREF(list);
		return PyErr_NoMemory();
	}
	for (unsigned i = 0; i < n; i++) {
		PyObject *t = Py_BuildValue("(sis)", copy[i].path, copy[i].err, copy[i].reason);
		if (!t || PyList_Append(list, t) < 0) {
			Py_XDECREF(t);
			Py_DECREF(list);
			PyMem_RawFree(copy);
			return NULL;
		}
		Py_DECREF(t);
	}
	PyMem_RawFree(copy);
	return Py_BuildValue("(NK)", list, (unsigned long long)dropped);
}

/* A raw batch's samples (sizes[i] bytes at data + offsets[i]) as a tuple
 * of bytes, copied; None for a batch of images or token rows. */
static PyObject *batch_raw(const rf_batch *b)
{
	if (b->sample_bytes || !b->data || !b->sizes)
		Py_RETURN_NONE;
	PyObject *t = PyTuple_New((Py_ssize_t)b->count);
	for (uint32_t i = 0; t && i < b->count; i++) {
		PyObject *x = PyBytes_FromStringAndSize((const char *)b->data + b->offsets[i],
							(Py_ssize_t)b->sizes[i]);
		if (!x) {
			Py_DECREF(t);
			return NULL;
		}
		PyTuple_SET_ITEM(t, i, x);
	}
	return t;
}

/* A batch's fields (rf_batch.fields) as Python values, copied. */
static PyObject *batch_fields(const rf_batch *b)
{
	PyObject *t = PyTuple_New((Py_ssize_t)b->nfields);
	for (uint32_t i = 0; t && i < b->nfields; i++) {
		const rf_field *f = &b->fields[i];
		PyObject *x = Py_BuildValue(
			"(sy#y#y#)", f->name, (const char *)f->bytes, (Py_ssize_t)f->offsets[b->count],
			(const char *)f->offsets, (Py_ssize_t)(b->count + 1) * (Py_ssize_t)sizeof(uint64_t),
			(const char *)f->present, (Py_ssize_t)b->count);
		if (!x) {
			Py_DECREF(t);
			return NULL;
		}
		PyTuple_SET_ITEM(t, i, x);
	}
	return t;
}

/* Destroys the C loader now, or once the last Batch of it is gone and the
 * thread waiting in next() (woken here) has left. */
static PyObject *Loader_close(LoaderObject *self, PyObject *unused)
{
	(void)unused;
	if (!self->l)
		Py_RETURN_NONE;
	self->closing = 1;
	if (self->in_next)
		rf_loader_interrupt(self->l);
	loader_destroy_if_unused(self);
	Py_RETURN_NONE;
}

static PyObject *Loader_error_detail(LoaderObject *self, PyObject *unused)
{
	(void)unused;
	return PyUnicode_FromString(self->l && !self->in_next ? rf_loader_error(self->l) : "");
}

static PyMethodDef Loader_methods[] = {
	{ "next", (PyCFunction)Loader_next, METH_NOARGS,
	  "next() -> Batch or None at the end; releases the GIL while waiting, "
	  "interruptible by signals and by close() from another thread" },
	{ "hold_back", (PyCFunction)Loader_hold_back, METH_O,
	  "hold_back(batch): the next next() returns this batch again" },
	{ "state_save", (PyCFunction)Loader_state_save, METH_NOARGS, "state bytes" },
	{ "order", (PyCFunction)Loader_order, METH_NOARGS, "rf_order_info as a dict" },
	{ "stats", (PyCFunction)Loader_stats, METH_NOARGS, "rf_stats as a dict" },
	{ "class_names", (PyCFunction)Loader_class_names, METH_NOARGS,
	  "the class names, in label order ([] when the source names none)" },
	{ "sample_name", (PyCFunction)Loader_sample_name, METH_O,
	  "sample_name(id) -> str: the name of a sample id (rf_loader_sample_name)" },
	{ "take_bad_samples", (PyCFunction)Loader_take_bad_samples, METH_NOARGS,
	  "([(path, err, reason)], dropped) since the last call" },
	{ "close", (PyCFunction)Loader_close, METH_NOARGS,
	  "destroy the C loader (deferred while batches are alive)" },
	{ "error_detail", (PyCFunction)Loader_error_detail, METH_NOARGS, "rf_loader_error()" },
	{ NULL, NULL, 0, NULL },
};

static PyTypeObject LoaderType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "ringfeed._ringfeed.Loader",
	.tp_basicsize = sizeof(LoaderObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Loader(config: dict, resume_state=None, debug=False): one rf_loader",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)Loader_init,
	.tp_dealloc = (destructor)Loader_dealloc,
	.tp_methods = Loader_methods,
};

/* ---- Batch ---- */

/* Gives the slot back (stream: a cudaStream_t as an int, 0 = legacy default). */
static void batch_release(BatchObject *self, void *stream)
{
	if (!self->b)
		return;
	rf_batch *b = self->b;
	self->b = NULL;
	if (self->guard)
		mprotect(self->guard, self->guard_len, PROT_NONE);
	if (self->owner->l) {
		if (stream)
			rf_batch_release_on(self->owner->l, b, stream);
		else
			rf_batch_release(self->owner->l, b);
	}
}

static void Batch_dealloc(BatchObject *self)
{
	batch_release(self, NULL);
	if (self->guard)
		munmap(self->guard, self->guard_len);
	Py_XDECREF(self->labels);
	Py_XDECREF(self->fields);
	Py_XDECREF(self->raw);
	Py_XDECREF(self->ids);
	LoaderObject *owner = self->owner;
	if (owner) {
		owner->batches_alive--;
		loader_destroy_if_unused(owner);
		Py_DECREF(owner);
	}
	PyObject_Free(self);
}

static PyObject *Batch_release(BatchObject *self, PyObject *args)
{
	unsigned long long stream = 0;
	if (!PyArg_ParseTuple(args, "|K", &stream))
		return NULL;
	batch_release(self, (void *)(uintptr_t)stream);
	Py_RETURN_NONE;
}

static PyObject *Batch_wait(BatchObject *self, PyObject *args)
{
	unsigned long long stream = 0;
	if (!PyArg_ParseTuple(args, "|K", &stream))
		return NULL;
	if (!self->b)
		return raise_rf(-EINVAL, "the batch was released");
	int rc = rf_batch_wait(self->b, (void *)(uintptr_t)stream);
	if (rc < 0)
		return raise_rf(rc, "rf_batch_wait failed");
	Py_RETURN_NONE;
}

static PyObject *Batch_device_ptr(BatchObject *self, void *unused)
{
	(void)unused;
	if (!self->b)
		return raise_rf(-EINVAL, "the batch was released");
	return PyLong_FromUnsignedLongLong((uintptr_t)self->b->device_data);
}

static PyObject *Batch_released(BatchObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(self->b == NULL);
}

static int Batch_getbuffer(BatchObject *self, Py_buffer *view, int flags)
{
	if (!self->b) {
		PyErr_SetString(RfError, "the batch was released: its slot belongs to the loader again");
		view->obj = NULL;
		return -1;
	}
	rf_batch *b = self->b;
	size_t len = b->sample_bytes ? (size_t)b->count * b->sample_bytes : b->bytes;
	void *data = self->guard ? self->guard : b->data;
	if (PyBuffer_FillInfo(view, (PyObject *)self, data, (Py_ssize_t)len, 0, flags) < 0)
		return -1;
	self->exports++;
	return 0;
}

static void Batch_releasebuffer(BatchObject *self, Py_buffer *view)
{
	(void)view;
	self->exports--;
}

static PyBufferProcs Batch_as_buffer = {
	.bf_getbuffer = (getbufferproc)Batch_getbuffer,
	.bf_releasebuffer = (releasebufferproc)Batch_releasebuffer,
};

static PyMethodDef Batch_methods[] = {
	{ "release", (PyCFunction)Batch_release, METH_VARARGS,
	  "release(stream=0): give the slot back (rf_batch_release_on with a stream)" },
	{ "wait", (PyCFunction)Batch_wait, METH_VARARGS,
	  "wait(stream=0): rf_batch_wait, the stream waits for the device copy" },
	{ NULL, NULL, 0, NULL },
};

static PyMemberDef Batch_members[] = {
	{ "index", T_ULONGLONG, offsetof(BatchObject, index), READONLY, NULL },
	{ "epoch", T_UINT, offsetof(BatchObject, epoch), READONLY, NULL },
	{ "count", T_UINT, offsetof(BatchObject, count), READONLY, NULL },
	{ "height", T_UINT, offsetof(BatchObject, height), READONLY, NULL },
	{ "width", T_UINT, offsetof(BatchObject, width), READONLY, NULL },
	{ "channels", T_UINT, offsetof(BatchObject, channels), READONLY, NULL },
	{ "dtype", T_INT, offsetof(BatchObject, dtype), READONLY, NULL },
	{ "layout", T_INT, offsetof(BatchObject, layout), READONLY, NULL },
	{ "device_dtype", T_INT, offsetof(BatchObject, device_dtype), READONLY, NULL },
	{ "device_layout", T_INT, offsetof(BatchObject, device_layout), READONLY, NULL },
	{ "sample_bytes", T_PYSSIZET, offsetof(BatchObject, sample_bytes), READONLY, NULL },
	{ "device_sample_bytes", T_PYSSIZET, offsetof(BatchObject, device_sample_bytes),
	  READONLY, NULL },
	{ "labels", T_OBJECT, offsetof(BatchObject, labels), READONLY, "int32 bytes" },
	{ "ids", T_OBJECT, offsetof(BatchObject, ids), READONLY, "uint64 bytes" },
	{ "raw", T_OBJECT, offsetof(BatchObject, raw), READONLY,
	  "raw mode: (bytes, ...) one per sample, copied; else None" },
	{ "fields", T_OBJECT, offsetof(BatchObject, fields), READONLY,
	  "((name, bytes, offsets: count + 1 uint64, present: count uint8), ...) per field" },
	{ NULL, 0, 0, 0, NULL },
};

static PyGetSetDef Batch_getset[] = {
	{ "device_ptr", (getter)Batch_device_ptr, NULL, "device_data as an int (0: none)", NULL },
	{ "released", (getter)Batch_released, NULL, "True once the slot was given back", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject BatchType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "ringfeed._ringfeed.Batch",
	.tp_basicsize = sizeof(BatchObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "a batch lent by Loader.next(); its buffer is the slot's data",
	.tp_dealloc = (destructor)Batch_dealloc,
	.tp_as_buffer = &Batch_as_buffer,
	.tp_methods = Batch_methods,
	.tp_members = Batch_members,
	.tp_getset = Batch_getset,
};

/* ---- module ---- */

static PyObject *mod_defaults(PyObject *m, PyObject *unused)
{
	(void)m;
	(void)unused;
	rf_config cfg;
	rf_config_default(&cfg);
	PyObject *d = PyDict_New();
	for (size_t i = 0; d && i < NCONFIG_LIST; i++) {
		if (!in_config_dict(&config_list[i]))
			continue;
		PyObject *v = field_get(&cfg, &config_list[i]);
		if (!v || PyDict_SetItemString(d, config_list[i].name, v) < 0) {
			Py_XDECREF(v);
			Py_DECREF(d);
			return NULL;
		}
		Py_DECREF(v);
	}
	return d;
}

static PyObject *mod_strerror(PyObject *m, PyObject *args)
{
	(void)m;
	int code;
	if (!PyArg_ParseTuple(args, "i", &code))
		return NULL;
	return PyUnicode_FromString(rf_strerror(code));
}

/* state_parse(bytes) -> dict: rf_state_parse(). */
static PyObject *mod_state_parse(PyObject *m, PyObject *args)
{
	(void)m;
	Py_buffer buf;
	if (!PyArg_ParseTuple(args, "y*", &buf))
		return NULL;
	rf_state_info x;
	char msg[256] = "";
	int rc = rf_state_parse(buf.buf, (size_t)buf.len, &x, msg, sizeof(msg));
	PyBuffer_Release(&buf);
	if (rc < 0)
		return raise_rf(rc, msg);
	return Py_BuildValue("{s:K,s:K,s:K,s:K,s:I,s:I,s:I,s:K,s:K}", "next_batch",
			     (unsigned long long)x.next_batch, "epoch",
			     (unsigned long long)x.epoch, "batch_in_epoch",
			     (unsigned long long)x.batch_in_epoch, "batches_per_epoch",
			     (unsigned long long)x.batches_per_epoch, "rank", x.rank,
			     "world_size", x.world_size, "batch_size", x.batch_size,
			     "rest_samples", (unsigned long long)x.rest_samples,
			     "epoch_first_batch", (unsigned long long)x.epoch_first_batch);
}

/* state_at_epoch(state, epoch) -> bytes: a copy of the state moved to the
 * first batch of epoch (for set_epoch()), with rf_state_seek(). */
static PyObject *mod_state_at_epoch(PyObject *m, PyObject *args)
{
	(void)m;
	Py_buffer buf;
	unsigned long long epoch;
	if (!PyArg_ParseTuple(args, "y*K", &buf, &epoch))
		return NULL;
	rf_state_info x;
	char msg[256] = "";
	PyObject *moved = NULL;
	int rc = rf_state_parse(buf.buf, (size_t)buf.len, &x, msg, sizeof(msg));
	if (rc == 0)
		moved = PyBytes_FromStringAndSize(buf.buf, buf.len);
	if (moved) /* a new bytes object, not shared yet: written in place */
		rc = rf_state_seek(PyBytes_AS_STRING(moved), (size_t)buf.len,
				   epoch * x.batches_per_epoch, msg, sizeof(msg));
	PyBuffer_Release(&buf);
	if (rc < 0) {
		Py_XDECREF(moved);
		return raise_rf(rc, msg);
	}
	return moved; /* NULL with MemoryError when the copy failed */
}

/* The names table (rf_enum_entry()) as two dicts keyed by rf_config field:
 * ENUM_VALUES[field][name] = value for every name the library takes, and
 * ENUM_NAMES[field][value] = the value's name (rf_enum_name()).
 * @return : 0, or -1 with an exception set. */
static int add_enum_names(PyObject *m)
{
	PyObject *values = PyDict_New(), *names = PyDict_New();
	const char *field;
	for (int k = 0; values && names && (field = rf_enum_kind_name((rf_enum_kind)k)); k++) {
		PyObject *by_name = PyDict_New(), *by_value = PyDict_New();
		int ok = by_name && by_value && PyDict_SetItemString(values, field, by_name) == 0 &&
			 PyDict_SetItemString(names, field, by_value) == 0;
		const char *name;
		int value;
		for (size_t i = 0; ok && (name = rf_enum_entry((rf_enum_kind)k, i, &value, NULL)); i++) {
			PyObject *v = PyLong_FromLong(value);
			PyObject *n = PyUnicode_FromString(rf_enum_name((rf_enum_kind)k, value));
			ok = v && n && PyDict_SetItemString(by_name, name, v) == 0 &&
			     PyDict_SetItem(by_value, v, n) == 0;
			Py_XDECREF(v);
			Py_XDECREF(n);
		}
		Py_XDECREF(by_name);
		Py_XDECREF(by_value);
		if (!ok)
			goto fail;
	}
	if (!values || !names || PyModule_AddObject(m, "ENUM_VALUES", values) < 0)
		goto fail;
	values = NULL; /* the module holds it now */
	if (PyModule_AddObject(m, "ENUM_NAMES", names) < 0)
		goto fail;
	return 0;
fail:
	Py_XDECREF(values);
	Py_XDECREF(names);
	return -1;
}

/* The lists themselves, for the package and its tests: CONFIG_FIELDS, a
 * tuple of (field, python, state) with python "keyword", "package",
 * "extension" or "none" and state "order", "output", "tokens", "dataset" or
 * "free" (src/lists/rf_lists.h says what each means); STATS_FIELDS, a tuple
 * of (field, stats() key, kind) with kind "count", "time", "io_path",
 * "decode" or "reserved". @return : 0, or -1 with an exception set. */
static int add_lists(PyObject *m)
{
	static const char *const python[] = { "keyword", "package", "extension", "none" };
	static const char *const state[] = { "order", "output", "tokens", "dataset", "free" };
	static const char *const kind[] = { "count", "time", "io_path", "decode", "reserved" };
	static const rf_stat_entry stats[] = { RF_STATS_FIELDS(RF_STAT_ENTRY) };
	const size_t nstats = sizeof(stats) / sizeof(stats[0]);
	PyObject *config = PyTuple_New((Py_ssize_t)NCONFIG_LIST);
	PyObject *counters = PyTuple_New((Py_ssize_t)nstats);
	for (size_t i = 0; config && i < NCONFIG_LIST; i++) {
		const rf_config_entry *e = &config_list[i];
		PyObject *t = Py_BuildValue("(sss)", e->name, python[e->python], state[e->state]);
		if (!t)
			Py_CLEAR(config);
		else
			PyTuple_SET_ITEM(config, (Py_ssize_t)i, t);
	}
	for (size_t i = 0; counters && i < nstats; i++) {
		PyObject *t = Py_BuildValue("(sss)", stats[i].name, stats[i].key, kind[stats[i].kind]);
		if (!t)
			Py_CLEAR(counters);
		else
			PyTuple_SET_ITEM(counters, (Py_ssize_t)i, t);
	}
	if (!config || !counters || PyModule_AddObject(m, "CONFIG_FIELDS", config) < 0) {
		Py_XDECREF(config);
		Py_XDECREF(counters);
		return -1;
	}
	if (PyModule_AddObject(m, "STATS_FIELDS", counters) < 0) {
		Py_DECREF(counters);
		return -1;
	}
	return 0;
}

static PyMethodDef module_methods[] = {
	{ "defaults", mod_defaults, METH_NOARGS, "rf_config_default() as a dict" },
	{ "strerror", mod_strerror, METH_VARARGS, "rf_strerror(code)" },
	{ "state_parse", mod_state_parse, METH_VARARGS, "rf_state_parse() as a dict" },
	{ "state_at_epoch", mod_state_at_epoch, METH_VARARGS,
	  "a saved state moved to the start of an epoch" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef moduledef = {
	PyModuleDef_HEAD_INIT, "_ringfeed", "the C side of the ringfeed package", -1,
	module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ringfeed(void)
{
	if (PyType_Ready(&LoaderType) < 0 || PyType_Ready(&BatchType) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&moduledef);
	if (!m)
		return NULL;
	PyObject *errno_mod = PyImport_ImportModule("errno");
	errno_names = errno_mod ? PyObject_GetAttrString(errno_mod, "errorcode") : NULL;
	Py_XDECREF(errno_mod);
	if (!errno_names || !(RfError = make_error_class()) ||
	    PyModule_AddObject(m, "Error", RfError) < 0)
		goto fail;
	Py_INCREF(RfError);
	/* every code of the list, as a constant and in ERROR_CODES (name -> code) */
	PyObject *codes = PyDict_New();
	for (size_t i = 0; codes && i < NRF_CODES; i++) {
		PyObject *v = PyLong_FromLong(rf_codes[i].code);
		int bad = !v || PyDict_SetItemString(codes, rf_codes[i].name, v) < 0 ||
			  PyModule_AddIntConstant(m, rf_codes[i].name, rf_codes[i].code) < 0;
		Py_XDECREF(v);
		if (bad)
			Py_CLEAR(codes);
	}
	if (!codes || PyModule_AddObject(m, "ERROR_CODES", codes) < 0) {
		Py_XDECREF(codes);
		goto fail;
	}
	Py_INCREF(&LoaderType);
	Py_INCREF(&BatchType);
	if (PyModule_AddObject(m, "Loader", (PyObject *)&LoaderType) < 0 ||
	    PyModule_AddObject(m, "Batch", (PyObject *)&BatchType) < 0 ||
	    PyModule_AddIntConstant(m, "STATE_MAX_BYTES", RF_STATE_MAX_BYTES) < 0 ||
	    PyModule_AddIntConstant(m, "TEST_HOOKS", RINGFEED_TEST_HOOKS) < 0 ||
	    PyModule_AddIntConstant(m, "IMAGE_FORMATS", (long)rf_image_formats()) < 0 ||
	    /* ringfeed.__version__: the header's, which meson checks against
	     * project()'s version (the wheel's); the library is linked in whole,
	     * so it is the version of the code that runs */
	    PyModule_AddStringConstant(m, "VERSION", RF_VERSION_STRING) < 0 ||
	    add_enum_names(m) < 0 || add_lists(m) < 0)
		goto fail;
	return m;
fail:
	Py_DECREF(m);
	return NULL;
}
