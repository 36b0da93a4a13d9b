/* diag.c - helpers of the commands built on the public API: echoing a
 * problem's input error and writing the API's JSON text. */
#include "cli/cli.h"

void cli_input_diag(const et_diag *d, const char *einsum, const char *shape,
                    const char *dtype)
{
    if (d->input == ET_INPUT_SHAPE)
        cli_diag("--shape", shape, d);
    else if (d->input == ET_INPUT_DTYPE)
        cli_diag("--dtype", dtype, d);
    else
        cli_diag("einsum", einsum, d);
}

int cli_json_emit_api(char *text)
{
    if (!text) {
        fprintf(stderr, "eintune: out of memory writing JSON\n");
        return 1;
    }
    /* a raw item prints as its text: cli_json_emit writes it unchanged */
    cJSON *raw = cJSON_CreateRaw(text);
    et_free(text);
    if (!raw) {
        fprintf(stderr, "eintune: out of memory writing JSON\n");
        return 1;
    }
    int rc = cli_json_emit(raw);
    cJSON_Delete(raw);
    return rc;
}
