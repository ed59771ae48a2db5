/* gemm_rate: GEMM throughput of a backend at given shapes, for
 * scripts/gpu_check.sh (not a test). Each M,N,K is C (M x N) = A (M x K) B^T,
 * as the layers call it, timed in trials of 0.1 s after a warm-up (ax_gemm_rate).
 *   gemm_rate cuda bf16 8192,2304,768 8192,768,768 ...
 * prints one line per shape and the best: "best <TFLOP/s>". */
#include "backend/backend.h"
#include "measure/timing.h"
#include "util/err.h"
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    ax_dtype t;
    if (argc < 4 || ax_backend_use(argv[1], 0) != 0 || ax_dtype_parse(argv[2], &t) != 0) {
        fprintf(stderr, "usage: gemm_rate BACKEND fp32|bf16 M,N,K... (%s)\n", ax_err_msg());
        MPI_Finalize();
        return 2;
    }
    double best = 0;
    for (int i = 3; i < argc; i++) {
        int m, n, k;
        if (sscanf(argv[i], "%d,%d,%d", &m, &n, &k) != 3) {
            fprintf(stderr, "gemm_rate: bad shape %s\n", argv[i]);
            return 2;
        }
        double r = ax_gemm_rate(t, m, n, k, 0, 1, NULL, 0.5, MPI_COMM_WORLD);
        printf("%s %s M=%d N=%d K=%d: %.1f TFLOP/s\n", argv[1], argv[2], m, n, k, r / 1e12);
        if (r > best) best = r;
    }
    printf("best %.1f\n", best / 1e12);
    MPI_Finalize();
    return 0;
}
