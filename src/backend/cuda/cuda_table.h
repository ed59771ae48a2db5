/* The CUDA backend's table, for backend.c (compiled when AX_HAVE_CUDA). */
#ifndef AX_BACKEND_CUDA_TABLE_H
#define AX_BACKEND_CUDA_TABLE_H
#include "backend/backend.h"
extern const ax_backend ax_cuda_backend;
#endif
