/*
 * Private to the subprocess code (proc.c: spawn and pump; proc_call.c:
 * running a tool to completion over it).
 */
#ifndef CORDON_COMMON_PROC_INTERNAL_H
#define CORDON_COMMON_PROC_INTERNAL_H

struct cbuf;
struct proc;

/* Moves p's captured stdout and stderr to *out and *err (the caller
 * cbuf_frees them); p keeps none. */
void proc_take_outputs(struct proc *p, struct cbuf **out, struct cbuf **err);

#endif
