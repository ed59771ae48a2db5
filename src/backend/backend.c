#include "backend/backend.h"
#include "backend/cpu/cpu.h"
#include "util/err.h"
#include <string.h>

static const ax_backend *const compiled[] = {&ax_cpu_backend};
static const ax_backend *current = &ax_cpu_backend;

const ax_backend *ax_be(void) { return current; }

const char *ax_backend_names(void) { return "cpu"; }

int ax_backend_use(const char *name) {
    for (size_t i = 0; i < sizeof compiled / sizeof *compiled; i++)
        if (!strcmp(compiled[i]->name, name)) { current = compiled[i]; return 0; }
    return AX_ERR("--backend %s: expected one of the compiled backends (%s)", name, ax_backend_names());
}
