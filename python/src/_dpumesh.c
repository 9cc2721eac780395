/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * _dpumesh.c - the CPython extension under the dpumesh asyncio package: a thin, synchronous
 * view of the libdpumesh C API (open, fd, progress, send, release). The asyncio layer
 * (dpumesh/__init__.py) does the rest. Written against the CPython C API directly: the
 * surface is a dozen functions, and the one delicate part — a message's RX slots exported
 * as a zero-copy memoryview and released only when the last view is gone — is the buffer
 * protocol itself; it needs no binding library in pip's isolated build environment.
 *
 * Every call runs on the thread of the asyncio loop: that thread is libdpumesh's progress
 * thread and worker 0.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <string.h>

#include "dpumesh/host/dpumesh.h"

/* ---- Msg: a received request or response ---- */

typedef struct {
	PyObject_HEAD
	PyObject *pod; /* the Pod (kept alive while the message is) */
	struct dpumesh_msg *msg; /* NULL once released */
	Py_ssize_t exports;      /* memoryviews of the body alive */
	int release_wanted;      /* release() called while views were alive */
} MsgObject;

typedef struct {
	PyObject_HEAD
	dpumesh_t *h;
	PyObject *events; /* list being filled by progress() */
} PodObject;

static PyTypeObject MsgType, PodType;

static void msg_do_release(MsgObject *m)
{
	if (m->msg && m->pod && ((PodObject *)m->pod)->h)
		dpumesh_msg_release(((PodObject *)m->pod)->h, m->msg);
	m->msg = NULL;
}

static PyObject *msg_release(MsgObject *m, PyObject *unused)
{
	(void)unused;
	if (m->exports > 0)
		m->release_wanted = 1; /* when the last view goes */
	else
		msg_do_release(m);
	Py_RETURN_NONE;
}

static void msg_dealloc(MsgObject *m)
{
	msg_do_release(m);
	Py_XDECREF(m->pod);
	Py_TYPE(m)->tp_free((PyObject *)m);
}

static int msg_getbuffer(MsgObject *m, Py_buffer *view, int flags)
{
	if (m->msg == NULL || m->release_wanted) {
		PyErr_SetString(PyExc_BufferError, "message released");
		return -1;
	}
	static const char empty[1] = {0};
	void *p = m->msg->body ? (void *)m->msg->body : (void *)empty;
	if (PyBuffer_FillInfo(view, (PyObject *)m, p, m->msg->body_len, 1, flags) != 0)
		return -1;
	m->exports++;
	return 0;
}

static void msg_releasebuffer(MsgObject *m, Py_buffer *view)
{
	(void)view;
	if (--m->exports == 0 && m->release_wanted)
		msg_do_release(m);
}

static PyBufferProcs msg_as_buffer = {(getbufferproc)msg_getbuffer,
				      (releasebufferproc)msg_releasebuffer};

static PyObject *str_or_none(const char *p, size_t n)
{
	if (p == NULL)
		Py_RETURN_NONE;
	return PyUnicode_DecodeLatin1(p, (Py_ssize_t)n, "strict");
}

static int msg_check(MsgObject *m)
{
	if (m->msg == NULL) {
		PyErr_SetString(PyExc_ValueError, "message released");
		return -1;
	}
	return 0;
}

static PyObject *msg_get(MsgObject *m, void *which)
{
	if (msg_check(m))
		return NULL;
	const struct dpumesh_msg *x = m->msg;
	switch ((int)(intptr_t)which) {
	case 0: return PyLong_FromUnsignedLong(x->req_id);
	case 1: return PyLong_FromUnsignedLong(x->step_id);
	case 2: return PyLong_FromUnsignedLong(x->flags);
	case 3: return PyLong_FromUnsignedLong(x->status);
	case 4: return PyLong_FromLong(x->header_ok);
	case 5: return PyLong_FromUnsignedLong(x->http_status);
	case 6: return str_or_none(x->header_ok ? x->service : NULL, x->service_len);
	case 7: return str_or_none(x->header_ok ? x->method : NULL, x->method_len);
	case 8: return str_or_none(x->header_ok ? x->path : NULL, x->path_len);
	case 9: return str_or_none(x->header_ok ? x->reason : "", x->reason_len);
	case 10: return str_or_none(x->header_ok ? x->hop : "", x->hop_len);
	case 11: return PyLong_FromUnsignedLong(x->body_len);
	case 12: return PyLong_FromUnsignedLong(dpumesh_msg_deadline_ms(x));
	default: Py_RETURN_NONE;
	}
}

static PyObject *msg_field(MsgObject *m, PyObject *arg)
{
	if (msg_check(m))
		return NULL;
	const char *name = PyUnicode_AsUTF8(arg);
	if (name == NULL)
		return NULL;
	const char *v;
	size_t len;
	if (dpumesh_msg_field(m->msg, name, &v, &len) != 0)
		Py_RETURN_NONE;
	return PyUnicode_DecodeLatin1(v, (Py_ssize_t)len, "strict");
}

static PyObject *msg_released(MsgObject *m, void *unused)
{
	(void)unused;
	return PyBool_FromLong(m->msg == NULL || m->release_wanted);
}

static PyMethodDef msg_methods[] = {
	{"release", (PyCFunction)msg_release, METH_NOARGS,
	 "Give the RX slots back (at once, or when the last memoryview of the body goes)."},
	{"field", (PyCFunction)msg_field, METH_O, "A header field as str, or None."},
	{NULL, NULL, 0, NULL},
};

static PyGetSetDef msg_getset[] = {
	{"req_id", (getter)msg_get, NULL, NULL, (void *)0},
	{"step_id", (getter)msg_get, NULL, NULL, (void *)1},
	{"flags", (getter)msg_get, NULL, NULL, (void *)2},
	{"mesh_status", (getter)msg_get, NULL, NULL, (void *)3},
	{"header_ok", (getter)msg_get, NULL, NULL, (void *)4},
	{"http_status", (getter)msg_get, NULL, NULL, (void *)5},
	{"service", (getter)msg_get, NULL, NULL, (void *)6},
	{"method", (getter)msg_get, NULL, NULL, (void *)7},
	{"path", (getter)msg_get, NULL, NULL, (void *)8},
	{"reason", (getter)msg_get, NULL, NULL, (void *)9},
	{"hop", (getter)msg_get, NULL, NULL, (void *)10},
	{"body_len", (getter)msg_get, NULL, NULL, (void *)11},
	{"deadline_ms", (getter)msg_get, NULL, NULL, (void *)12},
	{"released", (getter)msg_released, NULL, NULL, NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject MsgType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dpumesh._dpumesh.Msg",
	.tp_basicsize = sizeof(MsgObject),
	.tp_dealloc = (destructor)msg_dealloc,
	.tp_as_buffer = &msg_as_buffer,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A received message: a zero-copy view of its RX slots (memoryview(msg) is the body).",
	.tp_methods = msg_methods,
	.tp_getset = msg_getset,
};

/* ---- Pod ---- */

static int pod_check(PodObject *p)
{
	if (p->h == NULL) {
		PyErr_SetString(PyExc_ValueError, "pod closed");
		return -1;
	}
	return 0;
}

static void push_event(PodObject *p, PyObject *ev)
{
	if (ev == NULL || p->events == NULL || PyList_Append(p->events, ev) != 0)
		PyErr_Clear(); /* out of memory: counted as lost by the caller's deadline */
	Py_XDECREF(ev);
}

static PyObject *wrap_msg(PodObject *p, struct dpumesh_msg *m)
{
	MsgObject *o = PyObject_New(MsgObject, &MsgType);
	if (o == NULL) {
		dpumesh_msg_release(p->h, m);
		return NULL;
	}
	Py_INCREF(p);
	o->pod = (PyObject *)p;
	o->msg = m;
	o->exports = 0;
	o->release_wanted = 0;
	return (PyObject *)o;
}

static void cb_request(dpumesh_t *h, struct dpumesh_msg *m, void *user)
{
	(void)h;
	PodObject *p = user;
	PyObject *msg = wrap_msg(p, m);
	push_event(p, msg ? Py_BuildValue("(iN)", 0, msg) : NULL);
}

static void cb_response(dpumesh_t *h, struct dpumesh_msg *m, void *user)
{
	(void)h;
	PodObject *p = user;
	PyObject *msg = wrap_msg(p, m);
	push_event(p, msg ? Py_BuildValue("(iN)", 1, msg) : NULL);
}

static void cb_tx_done(dpumesh_t *h, uint32_t req_id, uint32_t step_id, uint32_t status, void *user)
{
	(void)h;
	push_event(user, Py_BuildValue("(iIII)", 2, req_id, step_id, status));
}

static int pod_init(PodObject *p, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"socket", "service", "tx_slots", "body_slots", "body_slot",
				 "rx_slots", "depth", NULL};
	const char *sock, *service;
	unsigned tx_slots = 64, body_slots = 64, body_slot = 8192, rx_slots = 64, depth = 256;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|IIIII", kwlist, &sock, &service, &tx_slots,
					 &body_slots, &body_slot, &rx_slots, &depth))
		return -1;
	struct dpumesh_options o;
	memset(&o, 0, sizeof(o));
	o.socket_path = sock;
	o.service = service;
	o.nb_workers = 1;
	struct dpumesh_geometry g = {{tx_slots, 1024}, {body_slots, body_slot}, {rx_slots, 1024},
				     {body_slots, body_slot}, depth, 0};
	o.geometry = g;
	o.callbacks.on_request = cb_request;
	o.callbacks.on_response = cb_response;
	o.callbacks.on_tx_done = cb_tx_done;
	o.user = p;
	char err[256] = "";
	int rc;
	Py_BEGIN_ALLOW_THREADS rc = dpumesh_open(&o, &p->h, err, sizeof(err));
	Py_END_ALLOW_THREADS if (rc != 0)
	{
		errno = -rc;
		PyErr_Format(PyExc_OSError, "dpumesh_open %s as %s: %s (%d)", sock, service, err, rc);
		p->h = NULL;
		return -1;
	}
	return 0;
}

static PyObject *pod_close(PodObject *p, PyObject *unused)
{
	(void)unused;
	if (p->h) {
		dpumesh_t *h = p->h;
		p->h = NULL;
		Py_BEGIN_ALLOW_THREADS dpumesh_close(h);
		Py_END_ALLOW_THREADS
	}
	Py_RETURN_NONE;
}

static void pod_dealloc(PodObject *p)
{
	if (p->h)
		dpumesh_close(p->h);
	Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyObject *pod_fd(PodObject *p, PyObject *unused)
{
	(void)unused;
	if (pod_check(p))
		return NULL;
	return PyLong_FromLong(dpumesh_fd(p->h));
}

static PyObject *pod_node_fd(PodObject *p, PyObject *unused)
{
	(void)unused;
	if (pod_check(p))
		return NULL;
	return PyLong_FromLong(dpumesh_node_fd(p->h));
}

static PyObject *pod_node_check(PodObject *p, PyObject *unused)
{
	(void)unused;
	if (pod_check(p))
		return NULL;
	return PyLong_FromLong(dpumesh_node_check(p->h));
}

static PyObject *pod_id(PodObject *p, PyObject *unused)
{
	(void)unused;
	if (pod_check(p))
		return NULL;
	return PyLong_FromUnsignedLong(dpumesh_pod_id(p->h));
}

/* progress() -> [(0, Msg) request | (1, Msg) response | (2, req_id, step_id, status) TX done] */
static PyObject *pod_progress(PodObject *p, PyObject *unused)
{
	(void)unused;
	if (pod_check(p))
		return NULL;
	PyObject *list = PyList_New(0);
	if (list == NULL)
		return NULL;
	p->events = list;
	(void)dpumesh_progress(p->h);
	p->events = NULL;
	return list;
}

/* prepare_wait() -> bool: arms the need-wakeup flag before the loop blocks on fd(); True when
 * work is queued already (call progress() again instead of waiting) */
static PyObject *pod_prepare_wait(PodObject *p, PyObject *unused)
{
	(void)unused;
	if (pod_check(p))
		return NULL;
	return PyBool_FromLong(dpumesh_prepare_wait(p->h));
}

/* fields: a sequence of (name, value) str pairs -> a C array; the caller frees it and drops
 * *keep (which owns the strings the array points into) after the send */
static int parse_fields(PyObject *seq, struct dpumesh_field **out, uint32_t *n, PyObject **keep)
{
	*out = NULL;
	*n = 0;
	*keep = NULL;
	if (seq == NULL || seq == Py_None)
		return 0;
	PyObject *fast = PySequence_Fast(seq, "fields: a sequence of (name, value) pairs");
	if (fast == NULL)
		return -1;
	Py_ssize_t cnt = PySequence_Fast_GET_SIZE(fast);
	struct dpumesh_field *f = PyMem_Calloc((size_t)cnt + 1, sizeof(*f));
	if (f == NULL) {
		Py_DECREF(fast);
		PyErr_NoMemory();
		return -1;
	}
	for (Py_ssize_t i = 0; i < cnt; i++) {
		PyObject *pair = PySequence_Fast_GET_ITEM(fast, i);
		const char *name, *value;
		if (!PyArg_ParseTuple(pair, "ss", &name, &value)) {
			PyMem_Free(f);
			Py_DECREF(fast);
			return -1;
		}
		f[i].name = name; /* valid while `fast` (and so the tuples) lives */
		f[i].value = value;
	}
	*keep = fast;
	*out = f;
	*n = (uint32_t)cnt;
	return 0;
}

/* What a send borrows from its Python arguments: the fields as a C array (pointing into
 * strings `keep` owns) and the body buffer; send_args_done() gives it all back. */
struct send_args {
	struct dpumesh_field *f;
	uint32_t nf;
	PyObject *keep;
	Py_buffer body;
};

static int send_args_fields(struct send_args *a, PyObject *fields)
{
	if (parse_fields(fields, &a->f, &a->nf, &a->keep) == 0)
		return 0;
	PyBuffer_Release(&a->body);
	return -1;
}

static PyObject *send_args_done(struct send_args *a, int rc)
{
	PyMem_Free(a->f);
	Py_XDECREF(a->keep);
	PyBuffer_Release(&a->body);
	return PyLong_FromLong(rc);
}

/* send_request(service, method, path, fields, body, req_id, step_id, deadline_ms) -> rc */
static PyObject *pod_send_request(PodObject *p, PyObject *args)
{
	struct dpumesh_request r;
	PyObject *fields;
	struct send_args a;
	if (pod_check(p))
		return NULL;
	memset(&r, 0, sizeof(r));
	if (!PyArg_ParseTuple(args, "sssOy*III", &r.service, &r.method, &r.path, &fields, &a.body,
			      &r.req_id, &r.step_id, &r.deadline_ms))
		return NULL;
	if (send_args_fields(&a, fields) != 0)
		return NULL;
	r.fields = a.f;
	r.nb_fields = a.nf;
	r.body = a.body.len ? a.body.buf : NULL;
	r.body_len = (uint32_t)a.body.len;
	return send_args_done(&a, a.body.len > UINT32_MAX ? -EMSGSIZE
							: dpumesh_send_request(p->h, 0, &r));
}

/* send_response(msg, status, fields, body) -> rc */
static PyObject *pod_send_response(PodObject *p, PyObject *args)
{
	MsgObject *m;
	unsigned status;
	PyObject *fields;
	struct send_args a;
	if (pod_check(p))
		return NULL;
	if (!PyArg_ParseTuple(args, "O!IOy*", &MsgType, &m, &status, &fields, &a.body))
		return NULL;
	if (m->msg == NULL) {
		PyBuffer_Release(&a.body);
		PyErr_SetString(PyExc_ValueError, "message released");
		return NULL;
	}
	if (send_args_fields(&a, fields) != 0)
		return NULL;
	return send_args_done(&a, a.body.len > UINT32_MAX || status > 999
					  ? -EMSGSIZE
					  : dpumesh_send_response(p->h, 0, m->msg, (uint16_t)status,
								  a.f, a.nf,
								  a.body.len ? a.body.buf : NULL,
								  (uint32_t)a.body.len));
}

static PyMethodDef pod_methods[] = {
	{"fd", (PyCFunction)pod_fd, METH_NOARGS, "The doorbell fd (readable: call progress())."},
	{"node_fd", (PyCFunction)pod_node_fd, METH_NOARGS,
	 "The channel to the node (readable: call node_check()); -1 if not known."},
	{"node_check", (PyCFunction)pod_node_check, METH_NOARGS,
	 "0 while the node is there, -ENOTCONN once it closed the channel."},
	{"pod_id", (PyCFunction)pod_id, METH_NOARGS, "This pod's id."},
	{"prepare_wait", (PyCFunction)pod_prepare_wait, METH_NOARGS,
	 "Arm the doorbell before the loop blocks; True: work is queued, progress() again."},
	{"progress", (PyCFunction)pod_progress, METH_NOARGS,
	 "Drain the doorbell and the RX SQ; returns the events."},
	{"send_request", (PyCFunction)pod_send_request, METH_VARARGS,
	 "send_request(service, method, path, fields, body, req_id, step_id, deadline_ms) -> rc"},
	{"send_response", (PyCFunction)pod_send_response, METH_VARARGS,
	 "send_response(msg, status, fields, body) -> rc"},
	{"close", (PyCFunction)pod_close, METH_NOARGS, "Unregister and free."},
	{NULL, NULL, 0, NULL},
};

static PyTypeObject PodType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dpumesh._dpumesh.Pod",
	.tp_basicsize = sizeof(PodObject),
	.tp_dealloc = (destructor)pod_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Pod(socket, service, tx_slots=64, body_slots=64, body_slot=8192, rx_slots=64, depth=256):\n"
		  "a registered pod: TX header slots, body slots (each body pool) of body_slot bytes, RX\n"
		  "header slots, SQ depth.",
	.tp_methods = pod_methods,
	.tp_init = (initproc)pod_init,
	.tp_new = PyType_GenericNew,
};

/* fnv1a(buffer) -> int: the FNV-1a sum dpumesh's sample services put in x-sum/x-digest
 * (dpumesh/common/fnv.h), at C speed for 1 MiB bodies */
static PyObject *mod_fnv1a(PyObject *self, PyObject *arg)
{
	(void)self;
	Py_buffer b;
	if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) != 0)
		return NULL;
	uint32_t h = 2166136261u;
	const unsigned char *p = b.buf;
	for (Py_ssize_t i = 0; i < b.len; i++)
		h = (h ^ p[i]) * 16777619u;
	PyBuffer_Release(&b);
	return PyLong_FromUnsignedLong(h);
}

static PyMethodDef mod_methods[] = {
	{"fnv1a", mod_fnv1a, METH_O, "FNV-1a (32-bit) of a bytes-like object."},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_dpumesh", "libdpumesh C API for the dpumesh asyncio package.", -1,
	mod_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__dpumesh(void)
{
	if (PyType_Ready(&MsgType) < 0 || PyType_Ready(&PodType) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&module);
	if (m == NULL)
		return NULL;
	Py_INCREF(&MsgType);
	Py_INCREF(&PodType);
	if (PyModule_AddObject(m, "Msg", (PyObject *)&MsgType) < 0 ||
	    PyModule_AddObject(m, "Pod", (PyObject *)&PodType) < 0 ||
	    PyModule_AddIntConstant(m, "EAGAIN", EAGAIN) < 0 ||
	    PyModule_AddIntConstant(m, "ENOBUFS", ENOBUFS) < 0 ||
	    PyModule_AddIntConstant(m, "EMSGSIZE", EMSGSIZE) < 0 ||
	    PyModule_AddIntConstant(m, "ENOTCONN", ENOTCONN) < 0 ||
	    PyModule_AddIntConstant(m, "OP_ERROR", DPUMESH_OP_ERROR) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
