/*
 * txexec-launcher: the set-user-ID-root program that `txexec wrap` puts in
 * place of a set-ID program, so that every invocation of that program runs
 * under txexec (README "Protecting set-user-ID programs", docs/semantics.md
 * §7 "Wrapped set-ID programs").
 *
 * The file built from this source is a template. `txexec wrap` copies it to
 * the wrapped path and writes, at conf_block, the absolute path of that
 * wrap's configuration (WRAPPED_DIR/ID/wrap.conf). Nothing the caller
 * controls chooses what runs: not argv[0], not the environment, not a path
 * the caller can reach. The launcher
 *
 *   1. reads its configuration path from its own (root-owned) file image;
 *   2. refuses unless the configuration, the txexec binary and the wrapped
 *      original, and every directory above each, are owned by root and
 *      writable by no one else (a sticky directory may be writable by
 *      others: they cannot rename or remove root's entries in it), and
 *      are reached without a symlink;
 *   3. removes from the environment what glibc's loader removes for a
 *      set-ID program (UNSECURE_ENVVARS, and MALLOC_CHECK_), and writes
 *      what is left into a sealed memfd: txexec hands it to the program
 *      and never reads it as its own environment;
 *   4. becomes fully root (real, effective, saved; groups cleared) and
 *      executes the recorded txexec binary with a fixed environment
 *      (PATH only) as "txexec _wrapped", passing its configuration path,
 *      the memfd, and the caller's real uid, real and effective gid and
 *      groups, read from the kernel (getresuid, getresgid, getgroups).
 *      The caller's arguments follow "--" and go to the program only.
 *
 * Started without euid 0 (no_new_privs, a nosuid mount, an unprivileged
 * tracer: wherever the kernel ignored the set-user-ID bit, as it would
 * have ignored the original's), it runs the original with the caller's
 * own credentials and environment, as the kernel would have; except a
 * program with file capabilities, whose entry only root can search: it
 * refuses.
 *
 * It exits 126 with one line "txexec-launcher: ..." when it refuses.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define EXIT_REFUSED 126

/* The marker txexec wrap looks for; the configuration path follows it,
 * NUL-terminated, in the rest of the block. volatile: the compiler must
 * read the bytes of the file, not fold the template's empty string. */
#define CONF_MARK "TXEXEC-LAUNCHER-CONFIG-PATH:"
#define CONF_BLOCK_SIZE 4096
static volatile const char conf_block[CONF_BLOCK_SIZE] = CONF_MARK;

/* The largest configuration file read. */
#define CONF_MAX 65536

/* glibc's UNSECURE_ENVVARS (sysdeps/generic/unsecvars.h), which its
 * loader unsets for a program started with AT_SECURE, and MALLOC_CHECK_,
 * which it unsets unless /etc/suid-debug exists. The wrapped program is
 * itself started with AT_SECURE, and its own loader removes them again. */
static const char *const unsecure[] = {
	"GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES",
	"LD_AUDIT", "LD_DEBUG", "LD_DEBUG_OUTPUT", "LD_DYNAMIC_WEAK",
	"LD_HWCAP_MASK", "LD_LIBRARY_PATH", "LD_ORIGIN_PATH", "LD_PRELOAD",
	"LD_PROFILE", "LD_SHOW_AUXV", "LD_USE_LOAD_BIAS", "LD_BIND_NOT",
	"LOCALDOMAIN", "LOCPATH", "MALLOC_ARENA_MAX", "MALLOC_ARENA_TEST",
	"MALLOC_MMAP_MAX_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_PERTURB_",
	"MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_CHECK_",
	"NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TMPDIR",
	"TZDIR", NULL,
};

extern char **environ;

static void __attribute__((noreturn, format(printf, 1, 2))) refuse(const char *fmt, ...)
{
	va_list ap;
	fputs("txexec-launcher: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_REFUSED);
}

/* secure_path refuses unless path is absolute, reached without a symlink
 * or a "." or ".." component, and it and every directory above it are
 * owned by root and writable by no one else (a sticky directory excepted,
 * see above); the last component must be a regular file. */
static void secure_path(const char *what, const char *path)
{
	char buf[PATH_MAX];
	struct stat st;
	char *comp, *next;
	int fd, nfd;

	if (path[0] != '/')
		refuse("%s %s: not an absolute path", what, path);
	if (strlen(path) >= sizeof buf)
		refuse("%s: path too long", what);
	strcpy(buf, path);
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		refuse("open /: %s", strerror(errno));
	comp = buf + 1;
	for (;;) {
		if (fstat(fd, &st) != 0)
			refuse("%s %s: %s", what, path, strerror(errno));
		if (st.st_uid != 0)
			refuse("%s %s: a directory above it is not owned by root", what, path);
		if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
			refuse("%s %s: a directory above it is writable by others than root", what, path);
		while (*comp == '/')
			comp++;
		next = strchr(comp, '/');
		if (next)
			*next = '\0';
		if (*comp == '\0' || strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0)
			refuse("%s %s: not a canonical path", what, path);
		nfd = openat(fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0)
			refuse("%s %s: %s", what, path, strerror(errno));
		close(fd);
		fd = nfd;
		if (!next)
			break;
		comp = next + 1;
		while (*comp == '/')
			comp++;
		if (*comp == '\0')
			refuse("%s %s: not a canonical path", what, path);
	}
	if (fstat(fd, &st) != 0)
		refuse("%s %s: %s", what, path, strerror(errno));
	close(fd);
	if (S_ISLNK(st.st_mode))
		refuse("%s %s: a symlink", what, path);
	if (!S_ISREG(st.st_mode))
		refuse("%s %s: not a regular file", what, path);
	if (st.st_uid != 0)
		refuse("%s %s: not owned by root", what, path);
	if (st.st_mode & 022)
		refuse("%s %s: writable by others than root", what, path);
}

/* conf_value returns a copy of the value of "key=value" in conf, or NULL. */
static char *conf_value(const char *conf, const char *key)
{
	size_t klen = strlen(key);
	const char *line = conf;

	while (*line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len > klen && strncmp(line, key, klen) == 0 && line[klen] == '=')
			return strndup(line + klen + 1, len - klen - 1);
		if (!end)
			break;
		line = end + 1;
	}
	return NULL;
}

static char *read_conf(const char *path)
{
	char *conf = malloc(CONF_MAX + 1);
	size_t n = 0;
	ssize_t r;
	int fd;

	if (!conf)
		refuse("out of memory");
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		refuse("configuration %s: %s", path, strerror(errno));
	while ((r = read(fd, conf + n, CONF_MAX - n)) > 0)
		n += (size_t)r;
	if (r < 0)
		refuse("configuration %s: %s", path, strerror(errno));
	if (n == CONF_MAX)
		refuse("configuration %s: too large", path);
	close(fd);
	conf[n] = '\0';
	if (memchr(conf, '\0', n))
		refuse("configuration %s: not text", path);
	return conf;
}

static int is_unsecure(const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t len = eq ? (size_t)(eq - kv) : strlen(kv);

	for (int i = 0; unsecure[i]; i++)
		if (strlen(unsecure[i]) == len && strncmp(kv, unsecure[i], len) == 0)
			return 1;
	return 0;
}

/* env_memfd writes the environment, less its unsecure variables, as
 * NUL-terminated strings into a sealed memfd left open across exec. */
static int env_memfd(void)
{
	int fd = memfd_create("txexec-wrapped-env", MFD_ALLOW_SEALING);

	if (fd < 0)
		refuse("memfd_create: %s", strerror(errno));
	for (char **e = environ; e && *e; e++) {
		if (!strchr(*e, '=') || is_unsecure(*e))
			continue;
		size_t len = strlen(*e) + 1, off = 0;
		while (off < len) {
			ssize_t w = write(fd, *e + off, len - off);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				refuse("write environment: %s", strerror(errno));
			}
			off += (size_t)w;
		}
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
		refuse("seal environment: %s", strerror(errno));
	if (lseek(fd, 0, SEEK_SET) != 0)
		refuse("seek environment: %s", strerror(errno));
	return fd;
}

int main(int argc, char **argv)
{
	char conf_path[CONF_BLOCK_SIZE];
	size_t mark = sizeof CONF_MARK - 1, i;
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;
	char *conf, *txexec, *original;
	char config_arg[CONF_BLOCK_SIZE + 16], envfd_arg[32], caller_arg[96];
	char *groups_arg, **nargv;
	gid_t *groups;
	int ngroups, envfd, n, pos;

	if (argc < 1)
		refuse("started without argv[0]");
	for (i = 0; i + mark < CONF_BLOCK_SIZE; i++) {
		conf_path[i] = conf_block[mark + i];
		if (conf_path[i] == '\0')
			break;
	}
	if (i + mark >= CONF_BLOCK_SIZE || conf_path[0] == '\0')
		refuse("not configured: this is the template that txexec wrap copies");

	if (getresuid(&ruid, &euid, &suid) != 0 || getresgid(&rgid, &egid, &sgid) != 0)
		refuse("read credentials: %s", strerror(errno));
	if (euid == 0)
		secure_path("configuration", conf_path);
	else if (access(conf_path, R_OK) != 0 && errno == EACCES)
		/* The entry of a program with file capabilities is root's
		 * alone: whoever could reach its copy would run it with them,
		 * outside txexec. */
		refuse("started without euid 0 (no_new_privs, a nosuid mount or a tracer), and this program's capabilities let only root reach it");
	conf = read_conf(conf_path);
	txexec = conf_value(conf, "txexec");
	original = conf_value(conf, "original");
	if (!txexec || !original)
		refuse("configuration %s: no txexec= or original= line", conf_path);

	if (euid != 0) {
		/* The kernel ignored the set-user-ID bit: it would have ignored
		 * the original's too. */
		secure_path("original", original);
		execv(original, argv);
		refuse("execute %s: %s", original, strerror(errno));
	}

	secure_path("txexec binary", txexec);
	secure_path("original", original);

	envfd = env_memfd();
	ngroups = getgroups(0, NULL);
	if (ngroups < 0)
		refuse("getgroups: %s", strerror(errno));
	groups = calloc((size_t)ngroups + 1, sizeof *groups);
	groups_arg = malloc((size_t)ngroups * 12 + 16);
	if (!groups || !groups_arg)
		refuse("out of memory");
	ngroups = getgroups(ngroups, groups);
	if (ngroups < 0)
		refuse("getgroups: %s", strerror(errno));
	pos = sprintf(groups_arg, "--groups=");
	for (n = 0; n < ngroups; n++)
		pos += sprintf(groups_arg + pos, "%s%u", n ? "," : "", (unsigned)groups[n]);

	snprintf(config_arg, sizeof config_arg, "--config=%s", conf_path);
	snprintf(envfd_arg, sizeof envfd_arg, "--env-fd=%d", envfd);
	snprintf(caller_arg, sizeof caller_arg, "--caller=%u,%u,%u",
		 (unsigned)ruid, (unsigned)rgid, (unsigned)egid);

	if (setgroups(0, NULL) != 0 || setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0)
		refuse("become root: %s", strerror(errno));

	nargv = calloc((size_t)argc + 8, sizeof *nargv);
	if (!nargv)
		refuse("out of memory");
	n = 0;
	nargv[n++] = "txexec";
	nargv[n++] = "_wrapped";
	nargv[n++] = config_arg;
	nargv[n++] = envfd_arg;
	nargv[n++] = caller_arg;
	nargv[n++] = groups_arg;
	nargv[n++] = "--";
	for (int a = 0; a < argc; a++)
		nargv[n++] = argv[a];
	nargv[n] = NULL;
	char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	execve(txexec, nargv, envp);
	refuse("execute %s: %s", txexec, strerror(errno));
}
