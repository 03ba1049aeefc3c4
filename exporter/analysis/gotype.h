/* SPDX-License-Identifier: MIT */
/* The kinds of Go values gospan records as function arguments (--functions). */
#ifndef GOSPAN_GOTYPE_H
#define GOSPAN_GOTYPE_H

/* Argument types: what a value is formatted as, and how many registers it takes. */
enum go_type {
	GO_TYPE_NONE = 0,
	GO_TYPE_BOOL,
	GO_TYPE_INT,	 /* signed integers, SIZE bytes */
	GO_TYPE_UINT,	 /* unsigned integers and uintptr */
	GO_TYPE_FLOAT,	 /* float32 (SIZE 4), float64 */
	GO_TYPE_COMPLEX, /* complex64, complex128: two float registers */
	GO_TYPE_STRING,	 /* two integer registers (pointer, length) */
	GO_TYPE_POINTER, /* pointers, maps, chans, funcs, unsafe.Pointer: one integer register */
	GO_TYPE_SLICE,	 /* three integer registers */
	GO_TYPE_IFACE,	 /* two integer registers */
	GO_TYPE_STACK,	 /* anything the register ABI passes on the stack (arrays of 2+) */
};

#endif
