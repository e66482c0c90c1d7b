/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * class_match.h - a frame's class from the compiled policy tables
 * (sluice_abi.h: port_classes, class_v4/class_v6). No BPF helpers: the
 * program and ctl/lib/logic/class_tables (which checks its compiled tables
 * against logic/classes' explain()) run this same code, so the compiler and
 * the data plane cannot disagree on what a table means.
 */
#ifndef SLUICE_CLASS_MATCH_H
#define SLUICE_CLASS_MATCH_H

#include <linux/types.h>
#include "sluice_abi.h"

/* No match in a prefix entry: the port table decides. */
#define SLUICE_CLASS_NO_MATCH 0xffffffffu

/* The port_classes element holding (set, kind, port). */
static inline __u32 sluice_port_block_index(__u32 set, __u32 kind, __u32 port)
{
	return (set * SLUICE_L4_KINDS + (kind & (SLUICE_L4_KINDS - 1))) * SLUICE_PORT_BLOCKS +
	       ((port & 0xffff) / SLUICE_PORTS_PER_BLOCK);
}

static inline __u32 sluice_port_block_class(const struct sluice_port_block *b, __u32 port)
{
	return b->class_of[port & (SLUICE_PORTS_PER_BLOCK - 1)];
}

/* The first match (precedence order) whose kinds and range hold the frame. */
static inline __u32 sluice_match_class(const struct sluice_class_matches *l, __u32 kind, __u32 port)
{
	for (__u32 i = 0; i < SLUICE_CLASS_MATCHES; i++) {
		if (i >= l->count)
			break;
		const struct sluice_class_match *m = &l->m[i];

		if (((m->kinds >> kind) & 1) && port >= m->lo && port <= m->hi)
			return m->class_id;
	}
	return SLUICE_CLASS_NO_MATCH;
}

/* The classes element of (set, id). */
static inline __u32 sluice_class_index(__u32 set, __u32 id)
{
	return set * SLUICE_CLASSES_MAX + (id & (SLUICE_CLASSES_MAX - 1));
}

#endif /* SLUICE_CLASS_MATCH_H */
