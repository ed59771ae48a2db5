#include "train/stop.h"
#include <signal.h>
#include <string.h>

static volatile sig_atomic_t caught;
static int held; /* the handlers are ours: release restores before[] */
static struct sigaction before[2];
static const int sigs[2] = {SIGTERM, SIGUSR1};

static void on_signal(int sig) { caught = sig; }

void ax_stop_catch(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART; /* the checkpoint writer's I/O goes on */
    sigemptyset(&sa.sa_mask);
    caught = 0;
    for (int i = 0; i < 2; i++) sigaction(sigs[i], &sa, &before[i]);
    held = 1;
}

void ax_stop_release(void) {
    for (int i = 0; held && i < 2; i++) sigaction(sigs[i], &before[i], NULL);
    held = 0;
}

int ax_stop_signal(void) { return caught; }

void ax_stop_agree(int sig) { caught = sig; }
