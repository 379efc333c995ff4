/* SPDX-License-Identifier: Apache-2.0 */
#include "cloudprovider/groupd.h"

#include <curl/curl.h>
#include <errno.h>

#include "shared/group-api.h"

int cp_groupd_global_init(struct vmact_err *err)
{
	CURLcode cc = curl_global_init(CURL_GLOBAL_DEFAULT);

	return cc == CURLE_OK ? 0 : vmact_err_set(err, EIO, "libcurl: %s", curl_easy_strerror(cc));
}

int cp_groupd_call(const char *socket, const char *method, const char *path, const json_t *body,
		   uint64_t timeout_usec, json_t **out, struct vmact_err *err)
{
	return vmact_gapi_call(socket, method, path, body, timeout_usec, out, err);
}
