/* SPDX-License-Identifier: Apache-2.0 */
#include "cloudprovider/tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/macro.h"

#define PEM_MAX (1u << 20)

struct pem_file {
	char *path;
	struct stat st; /* when last read */
};

struct cp_tls {
	pthread_mutex_t lock;
	struct pem_file f[3]; /* key, cert, cacert */
	unsigned failures;
};

static const char *const what[] = { "key", "cert", "cacert" };

static int read_pem(const char *path, const char *kind, char **out, struct stat *st,
		    struct vmact_err *err)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *buf = NULL;
	size_t n;

	if (!f)
		return vmact_err_set(err, errno, "%s %s: %m", kind, path);
	if (fstat(fileno(f), st) < 0)
		return vmact_err_set(err, errno, "%s %s: %m", kind, path);
	if (st->st_size > PEM_MAX)
		return vmact_err_set(err, EFBIG, "%s %s: larger than %u bytes", kind, path,
				     PEM_MAX);
	buf = malloc((size_t)st->st_size + 1);
	if (!buf)
		return vmact_err_set(err, ENOMEM, "%s %s: out of memory", kind, path);
	n = fread(buf, 1, (size_t)st->st_size, f);
	if (ferror(f))
		return vmact_err_set(err, EIO, "%s %s: read error", kind, path);
	buf[n] = 0;
	if (!strstr(buf, "-----BEGIN "))
		return vmact_err_set(err, EINVAL, "%s %s: not PEM", kind, path);
	*out = TAKE_PTR(buf);
	return 0;
}

/* Reads all three; *config set on success. */
static int load(struct cp_tls *t, grpc_ssl_server_certificate_config **config,
		struct vmact_err *err)
{
	char *text[3] = { NULL, NULL, NULL };
	struct stat st[3];
	grpc_ssl_pem_key_cert_pair pair;
	int r = 0;

	for (int i = 0; i < 3 && r >= 0; i++)
		r = read_pem(t->f[i].path, what[i], &text[i], &st[i], err);
	if (r >= 0) {
		pair.private_key = text[0];
		pair.cert_chain = text[1];
		*config = grpc_ssl_server_certificate_config_create(text[2], &pair, 1);
		if (!*config)
			r = vmact_err_set(err, EINVAL, "gRPC refused the key and certificates");
		for (int i = 0; i < 3 && r >= 0; i++)
			t->f[i].st = st[i];
	}
	for (int i = 0; i < 3; i++) {
		/* the key: gone from this process's heap as soon as gRPC has it */
		if (text[i])
			explicit_bzero(text[i], strlen(text[i]));
		free(text[i]);
	}
	return r;
}

static bool changed(const struct pem_file *f)
{
	struct stat st;

	if (stat(f->path, &st) < 0)
		return false; /* mid-rotation: keep what works */
	return st.st_ino != f->st.st_ino || st.st_size != f->st.st_size ||
	       st.st_mtim.tv_sec != f->st.st_mtim.tv_sec ||
	       st.st_mtim.tv_nsec != f->st.st_mtim.tv_nsec;
}

/* gRPC asks at server start and before each handshake. */
static grpc_ssl_certificate_config_reload_status fetch(void *ud,
						       grpc_ssl_server_certificate_config **config)
{
	struct cp_tls *t = ud;
	grpc_ssl_certificate_config_reload_status st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;
	bool first;

	pthread_mutex_lock(&t->lock);
	first = t->f[0].st.st_ino == 0;
	if (first || changed(&t->f[0]) || changed(&t->f[1]) || changed(&t->f[2])) {
		if (load(t, config, NULL) < 0) {
			t->failures += !first;
			st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_FAIL;
		} else {
			st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return st;
}

int cp_tls_new(const char *key, const char *cert, const char *cacert, struct cp_tls **out,
	       struct vmact_err *err)
{
	const char *paths[3] = { key, cert, cacert };
	grpc_ssl_server_certificate_config *config = NULL;
	struct cp_tls *t = calloc(1, sizeof(*t));
	int r;

	if (!t)
		return vmact_err_set(err, ENOMEM, "out of memory");
	pthread_mutex_init(&t->lock, NULL);
	for (int i = 0; i < 3; i++) {
		t->f[i].path = strdup(paths[i]);
		if (!t->f[i].path) {
			cp_tls_free(t);
			return vmact_err_set(err, ENOMEM, "out of memory");
		}
	}
	/* Only to check now what would otherwise fail at the first
	 * handshake; the fetcher reads them again for gRPC. */
	r = load(t, &config, err);
	if (config)
		grpc_ssl_server_certificate_config_destroy(config);
	if (r < 0) {
		cp_tls_free(t);
		return r;
	}
	for (int i = 0; i < 3; i++)
		t->f[i].st = (struct stat){ 0 };
	*out = t;
	return 0;
}

void cp_tls_free(struct cp_tls *t)
{
	if (!t)
		return;
	for (int i = 0; i < 3; i++)
		free(t->f[i].path);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

grpc_server_credentials *cp_tls_credentials(struct cp_tls *t)
{
	grpc_ssl_server_credentials_options *o =
		grpc_ssl_server_credentials_create_options_using_config_fetcher(
			GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY, fetch, t);

	return o ? grpc_ssl_server_credentials_create_with_options(o) : NULL;
}

unsigned cp_tls_reload_failures(struct cp_tls *t)
{
	unsigned n;

	pthread_mutex_lock(&t->lock);
	n = t->failures;
	pthread_mutex_unlock(&t->lock);
	return n;
}
