/* creds: prints its real and effective uid, to tell whether a set-user-ID
 * bit took effect when it was executed. */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	printf("uid=%d euid=%d\n", (int)getuid(), (int)geteuid());
	return 0;
}
