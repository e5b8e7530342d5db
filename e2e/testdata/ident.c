/* ident: prints which program it is (IDENT, set at compile time) and its pid. */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	printf("pid=%d ident=%s\n", (int)getpid(), IDENT);
	return 0;
}
