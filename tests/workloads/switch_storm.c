/* switch_storm.c — a context-switch storm, for the latency recipe's budgets: two threads pass one
 * byte back and forth through two pipes as fast as they can, so each blocks and is woken tens of
 * thousands of times a second (every hop is a switch-out, an off-CPU interval and a wakeup).
 */
#include <pthread.h>
#include <unistd.h>

static int ping[2], pong[2];

static void *echo(void *arg)
{
	char c;
	(void)arg;
	while (read(ping[0], &c, 1) == 1 && write(pong[1], &c, 1) == 1)
		;
	return NULL;
}

int main(void)
{
	pthread_t t;
	char c = 'x';
	if (pipe(ping) || pipe(pong) || pthread_create(&t, NULL, echo, NULL))
		return 1;
	while (write(ping[1], &c, 1) == 1 && read(pong[0], &c, 1) == 1)
		;
	return 1;
}
