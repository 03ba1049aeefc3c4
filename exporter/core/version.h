/* SPDX-License-Identifier: MIT */
#ifndef GOSPAN_VERSION_H
#define GOSPAN_VERSION_H

#define GOSPAN_NAME "gospan"
#define GOSPAN_VERSION "0.1.0"

#endif
