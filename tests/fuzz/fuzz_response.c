// SPDX-License-Identifier: MIT
/*
 * Fuzzes export_http.c's reading of a collector's 2xx answer: an ExportTraceServiceResponse in
 * protobuf (protobuf-c underneath) or in OTLP/JSON (cJSON), whose partial success is logged and
 * counted. The first input byte picks the encoding (bit 0: JSON), the rest is the body.
 */
#include "export/export_http.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_init_log();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *body;

	if (!size)
		return 0;
	body = fuzz_dup(data + 1, size - 1);
	if (!body)
		return 0;
	http_sink__parse_response(body, size - 1, data[0] & 1, 512);
	free(body);
	return 0;
}
