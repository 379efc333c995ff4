/* SPDX-License-Identifier: Apache-2.0 */
#include "node/kubelet.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base/macro.h"

static int path_of(char *buf, size_t len, const char *root, const char *p, struct vmact_err *err)
{
	if ((size_t)snprintf(buf, len, "%s%s", root, p) >= len)
		return vmact_err_set(err, ENAMETOOLONG, "%s%s: path too long", root, p);
	return 0;
}

/* mkdir -p of root + dir, each new one with mode. */
static int make_dirs(const char *root, const char *dir, mode_t mode, struct vmact_err *err)
{
	char p[PATH_MAX];
	size_t skip = strlen(root);
	int r = path_of(p, sizeof(p), root, dir, err);

	if (r < 0)
		return r;
	for (char *c = p + skip + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return vmact_err_set(err, errno, "mkdir %s: %s", p, strerror(errno));
		*c = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return vmact_err_set(err, errno, "mkdir %s: %s", p, strerror(errno));
	return 0;
}

/* root + path holds text, whole, with mode: a temporary file beside it,
 * synced, renamed over it. */
static int write_file(const char *root, const char *path, const char *text, mode_t mode,
		      struct vmact_err *err)
{
	char p[PATH_MAX], tmp[PATH_MAX];
	size_t len = strlen(text), done = 0;
	int fd, r = path_of(p, sizeof(p), root, path, err);

	if (r < 0)
		return r;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", p) >= sizeof(tmp))
		return vmact_err_set(err, ENAMETOOLONG, "%s: path too long", p);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return vmact_err_set(err, errno, "%s: %s", tmp, strerror(errno));
	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = vmact_err_set(err, n < 0 ? errno : EIO, "%s: %s", tmp,
					  strerror(n < 0 ? errno : EIO));
			break;
		}
		done += (size_t)n;
	}
	/* The mode as asked, whatever the umask made of it. */
	if (r >= 0 && fchmod(fd, mode) < 0)
		r = vmact_err_set(err, errno, "%s: %s", tmp, strerror(errno));
	if (r >= 0 && fsync(fd) < 0)
		r = vmact_err_set(err, errno, "%s: %s", tmp, strerror(errno));
	close(fd);
	if (r >= 0 && rename(tmp, p) < 0)
		r = vmact_err_set(err, errno, "%s: %s", p, strerror(errno));
	if (r < 0)
		unlink(tmp);
	return r;
}

static char *kubelet_conf(const struct nd_claim *c)
{
	json_t *taints = nd_claim_taints_json(c), *o;
	char *text;

	o = json_pack("{s:s,s:s,s:s,s:o}", "apiVersion", "kubelet.config.k8s.io/v1beta1", "kind",
		      "KubeletConfiguration", "providerID", c->provider_id, "registerWithTaints",
		      taints);
	text = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
	json_decref(o);
	return text;
}

static bool exists(const char *root, const char *path)
{
	char p[PATH_MAX];

	return path_of(p, sizeof(p), root, path, NULL) == 0 && access(p, F_OK) == 0;
}

/* KUBELET_EXTRA_ARGS for the kubelet's unit. The claim's checks leave no
 * space, quote, '$' or '\\' in a name, label or value: systemd reads
 * the line as written. Where the claim brings the kubelet's credentials,
 * KUBELET_KUBECONFIG_ARGS is emptied too: a unit as kubeadm's packages
 * ship it (10-kubeadm.conf) names its own --bootstrap-kubeconfig and
 * --kubeconfig there, which would otherwise stand beside ours (an
 * EnvironmentFile= overrides an Environment=). */
static char *kubelet_env(const char *root, const struct nd_claim *c)
{
	const char *auth = exists(root, ND_KUBECONFIG) ? " --kubeconfig=" ND_KUBECONFIG
			   : exists(root, ND_BOOTSTRAP_KUBECONFIG)
				   ? " --bootstrap-kubeconfig=" ND_BOOTSTRAP_KUBECONFIG
				     " --kubeconfig=" ND_KUBELET_KUBECONFIG
				   : "";
	char *s = NULL, *labels = nd_claim_labels_arg(c);

	if (labels && asprintf(&s,
			       "# Written by vmact-node from its claim; read by kubelet.service.\n"
			       "%sKUBELET_EXTRA_ARGS=--config-dir=" ND_KUBELET_CONFDIR
			       " --hostname-override=%s%s%s%s\n",
			       *auth ? "KUBELET_KUBECONFIG_ARGS=\n" : "", c->name, auth,
			       c->nlabels ? " --node-labels=" : "", labels) < 0)
		s = NULL;
	free(labels);
	return s;
}

/* The claim's secret into its file, the other kind's removed. */
static int write_secret(const char *root, const struct nd_claim *c, struct vmact_err *err)
{
	const char *keep = c->kubeconfig ? ND_KUBECONFIG : ND_BOOTSTRAP_KUBECONFIG;
	const char *drop = c->kubeconfig ? ND_BOOTSTRAP_KUBECONFIG : ND_KUBECONFIG;
	char p[PATH_MAX];
	int r;

	if (!c->kubeconfig && !c->bootstrap_kubeconfig)
		return 0;
	r = write_file(root, keep, c->kubeconfig ? c->kubeconfig : c->bootstrap_kubeconfig, 0600,
		       err);
	if (r >= 0 && path_of(p, sizeof(p), root, drop, NULL) == 0)
		unlink(p);
	return r;
}

int nd_kubelet_write(const char *root, const struct nd_claim *c, struct vmact_err *err)
{
	_cleanup_free_ char *conf = kubelet_conf(c), *env = NULL, *claim = NULL;
	char *line = nd_claim_json(c);
	int r;

	if (line && asprintf(&claim, "%s\n", line) < 0)
		claim = NULL;
	free(line);
	if (!conf || !claim)
		return vmact_err_set(err, ENOMEM, "out of memory");
	if ((r = make_dirs(root, ND_KUBELET_CONFDIR, 0755, err)) < 0 ||
	    (r = make_dirs(root, ND_STATE_DIR, 0700, err)) < 0 ||
	    (r = write_secret(root, c, err)) < 0)
		goto fail;
	/* After the secret: the arguments name the file kept. */
	env = kubelet_env(root, c);
	if (!env) {
		r = vmact_err_set(err, ENOMEM, "out of memory");
		goto fail;
	}
	if ((r = write_file(root, ND_KUBELET_CONF, conf, 0644, err)) < 0 ||
	    (r = write_file(root, ND_CLAIM_RUN, claim, 0644, err)) < 0 ||
	    (r = write_file(root, ND_CLAIM_KEPT, claim, 0600, err)) < 0 ||
	    /* Last: the kubelet's unit starts only once this file is there
	     * (its drop-in's ConditionPathExists). */
	    (r = write_file(root, ND_KUBELET_ENV, env, 0644, err)) < 0)
		goto fail;
	return 0;
fail:
	nd_kubelet_remove(root);
	return r;
}

int nd_kubelet_write_join(const char *root, const char *text, struct vmact_err *err)
{
	int r = make_dirs(root, ND_RUN_DIR, 0755, err);

	return r < 0 ? r : write_file(root, ND_KUBEADM_JOIN, text, 0600, err);
}

void nd_kubelet_remove(const char *root)
{
	static const char *const files[] = { ND_KUBELET_ENV, ND_KUBELET_CONF,
					     ND_CLAIM_RUN,   ND_CLAIM_KEPT,
					     ND_KUBECONFIG,  ND_BOOTSTRAP_KUBECONFIG,
					     ND_KUBEADM_JOIN };
	char p[PATH_MAX];

	for (size_t i = 0; i < ARRAY_SIZE(files); i++)
		if (path_of(p, sizeof(p), root, files[i], NULL) == 0)
			unlink(p);
}

int nd_kubelet_kept(const char *root, struct nd_claim *c, struct vmact_err *err)
{
	char p[PATH_MAX], buf[ND_CLAIM_LINE_MAX + 16];
	_cleanup_free_ char *line = NULL;
	size_t n;
	FILE *f;
	int r;

	*c = (struct nd_claim){ 0 };
	if ((r = path_of(p, sizeof(p), root, ND_CLAIM_KEPT, err)) < 0)
		return r;
	f = fopen(p, "re");
	if (!f)
		return errno == ENOENT ? -ENOENT
				       : vmact_err_set(err, errno, "%s: %s", p, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (asprintf(&line, "claim %s", buf) < 0)
		return vmact_err_set(err, ENOMEM, "out of memory");
	r = nd_claim_parse(line, strlen(line), c, err);
	if (r < 0)
		vmact_err_prefix(err, "%s", p);
	return r;
}
