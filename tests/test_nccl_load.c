/* nccl_load: NCCL is opened at run time (comm/nccl.h: ax_nccl_load), so the
 * binary starts without it; no GPU needed. Without arguments the library
 * loads (the dynamic loader's search, else the build's NCCL directory) with
 * every entry resolved, and its version is NCCL 2. With --missing (run with
 * AXONN_NCCL_LIB naming no file) or --foreign (AXONN_NCCL_LIB naming a
 * library that is not NCCL): one line naming the cause and the ways out, and
 * a grid made under a backend that wants NCCL (the CPU kernels behind a
 * table named "cuda" with device memory) fails with that line on every rank.
 *   AXONN_NCCL_LIB=/nonexistent mpirun -np 2 build/test_nccl_load --missing */
#include "test.h"
#include "backend/cpu/cpu.h"
#include "grid/grid.h"
#include "util/err.h"
#ifdef AX_HAVE_CUDA
#include "comm/nccl.h"
#endif

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
#ifndef AX_HAVE_CUDA
    (void)argv;
    printf("SKIP nccl_load: built without the CUDA backend\n");
    MPI_Finalize();
    return 77;
#else
    int missing = argc > 1 && !strcmp(argv[1], "--missing"), foreign = argc > 1 && !strcmp(argv[1], "--foreign");
    int version = 0, rc = ax_nccl_load(&version);
    if (!missing && !foreign) {
        CHECK(rc == 0, "NCCL does not load: %s", ax_err_msg());
        CHECK(version >= 21000 && version < 30000, "NCCL version %d", version);
        int r = ax_test_done("nccl_load");
        MPI_Finalize();
        return r;
    }
    const char *lib = getenv("AXONN_NCCL_LIB"), *msg = ax_err_msg();
    printf("the line: %s\n", msg);
    CHECK(lib && *lib, "run with AXONN_NCCL_LIB set");
    CHECK(rc != 0 && strstr(msg, "NCCL") && lib && strstr(msg, lib) && !strchr(msg, '\n'),
          "one line naming NCCL and %s: %s", lib ? lib : "(unset)", msg);
    CHECK(strstr(msg, "--device-comm mpi") != NULL, "the way out without NCCL: %s", msg);
    if (missing)
        CHECK(strstr(msg, "AXONN_NCCL_LIB") && strstr(msg, "LD_LIBRARY_PATH"), "where it looked, the hint: %s", msg);
    else CHECK(strstr(msg, "has no ncclGetVersion") != NULL, "the missing entry named: %s", msg);
    ax_err_clear();
    /* a backend that wants NCCL: the grid fails on every rank, with the line */
    static ax_backend wants;
    wants = ax_cpu_backend;
    wants.name = "cuda";
    wants.host_memory = 0;
    ax_backend_install(&wants);
    int P;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    ax_grid g;
    rc = ax_grid_init(&g, MPI_COMM_WORLD, 1, 1, 1, P);
    CHECK(rc != 0 && strstr(ax_err_msg(), "--device-comm mpi"), "the grid without NCCL: rc %d, %s", rc,
          rc ? ax_err_msg() : "");
    ax_backend_install(&ax_cpu_backend);
    int r = ax_test_done("nccl_load");
    MPI_Finalize();
    return r;
#endif
}
