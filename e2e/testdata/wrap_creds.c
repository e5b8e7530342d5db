// What the kernel gave a set-ID program, for the wrap tests to compare
// natively and wrapped: its real, effective and saved uids and gids, its
// groups, AT_SECURE, whether it is dumpable, its name (comm) and its
// capability sets.
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(void) {
	uid_t r, e, s;
	gid_t rg, eg, sg, groups[64];
	getresuid(&r, &e, &s);
	getresgid(&rg, &eg, &sg);
	printf("uid=%u,%u,%u gid=%u,%u,%u groups=", r, e, s, rg, eg, sg);
	int n = getgroups(64, groups);
	for (int i = 0; i < n; i++)
		printf("%s%u", i ? "," : "", groups[i]);
	printf(" secure=%lu dumpable=%d\n", getauxval(AT_SECURE), prctl(PR_GET_DUMPABLE));
	char line[256];
	FILE *comm = fopen("/proc/self/comm", "r");
	if (comm && fgets(line, sizeof line, comm))
		printf("comm=%s", line);
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "Cap", 3) == 0)
			fputs(line, stdout);
	return 0;
}
