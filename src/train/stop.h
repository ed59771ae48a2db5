/* Stopping a run cleanly on a scheduler's notice. SIGTERM (what srun and
 * most schedulers send before the kill) and SIGUSR1 (sbatch
 * --signal=USR1@SECONDS; Open MPI's mpirun forwards both to every rank) only
 * set a flag. The trainer reads it at each step boundary, agrees on it over
 * the ranks (a signal may reach them at different steps), and stops there
 * after committing a checkpoint of the steps done (docs/reliability.md).
 *
 *   ax_stop_catch();                  // the run's start
 *   int sig = ax_stop_signal();       // at a step boundary: 0, or the signal caught
 *   ax_stop_release();                // the run's end: the handlers before it back */
#ifndef AX_TRAIN_STOP_H
#define AX_TRAIN_STOP_H

void ax_stop_catch(void);
void ax_stop_release(void);
/* the signal caught since ax_stop_catch (0: none); it stays readable after release */
int ax_stop_signal(void);
/* records the signal the ranks agreed on (the largest any rank caught) */
void ax_stop_agree(int sig);
#endif
