/* segv: dies of SIGSEGV (exit status 139 in a shell). */
int main(void)
{
	*(volatile int *)0 = 1;
	return 0;
}
