// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The maps the uprobe object and the socket-layer writer share (wire_maps.bpf.h), linked into
 * both: the writer's own copies are replaced by the uprobe object's before it loads.
 */
#include "wire_maps.bpf.h"

struct traced_map traced SEC(".maps");
struct pending_map pending SEC(".maps");
struct h2_marks_map h2_marks SEC(".maps");
struct h2_writers_map h2_writers SEC(".maps");
struct tracestates_map tracestates SEC(".maps");
struct propagation_map propagation SEC(".maps");
