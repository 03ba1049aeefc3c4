/* SPDX-License-Identifier: MIT */
/*
 * The --functions file resolved against one target: which of its functions are there to probe,
 * with their probe sites and argument plans, and, said once at start, which are not and why.
 */
#ifndef GOSPAN_FUNCRESOLVE_H
#define GOSPAN_FUNCRESOLVE_H

struct functions;
struct target;

/*
 * Finds in target T (analysed, its analysis not yet ended) the functions FS lists for it, fills
 * T->funcs, and says at start, per function, what cannot be traced: not found (with the closest
 * names), inlined, arguments that cannot be read. 0 on success, also when nothing matched;
 * negative errno on failure, T then left with no functions (-EINVAL when T's analysis has ended).
 */
int functions__resolve(const struct functions *fs, struct target *t);

#endif
