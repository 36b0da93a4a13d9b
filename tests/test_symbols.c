/*
 * test_symbols.c - libeintune.so exports the public API and nothing else.
 *
 * The library is built with -fvisibility=hidden and include/eintune.h
 * marks each of its functions ET_API (default visibility). This test holds
 * the two lists against each other, both read when it runs:
 * - the header's function declarations ($ET_SOURCE_DIR/include/eintune.h,
 *   else include/eintune.h from the repository root where the tests run):
 *   comments, strings and preprocessor lines out, a statement at file
 *   scope with a parameter list and no body is a declaration, its name the
 *   identifier before the '(';
 * - the shared library's dynamic symbols ($ET_BUILD_DIR/libeintune.so,
 *   else build/libeintune.so), read from its ELF .dynsym section: the
 *   symbols it defines (section index not SHN_UNDEF) with global or weak
 *   binding, a function being STT_FUNC or STT_GNU_IFUNC.
 * It fails naming each declaration without the ET_API mark, each function
 * or variable the library exports that the header does not declare (an
 * internal name a user's program could collide with or link by accident),
 * and each declared function the library does not export as a function.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_NAMES = 4096, NAME_CAP = 128 };

typedef struct name_list {
    int n;
    char name[MAX_NAMES][NAME_CAP];
    int flag[MAX_NAMES]; /* header: has ET_API; library: is a function */
} name_list;

static name_list g_header;  /* the header's function declarations */
static name_list g_exports; /* the library's defined dynamic symbols */
static char g_header_path[1100];
static char g_so_path[1100];

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *s = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0)
        s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) {
        s[n] = '\0';
        if (len)
            *len = (size_t)n;
    }
    fclose(f);
    return s;
}

static int is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

static void add(name_list *l, const char *name, size_t n, int flag)
{
    if (l->n >= MAX_NAMES || n == 0 || n >= NAME_CAP)
        return;
    memcpy(l->name[l->n], name, n);
    l->name[l->n][n] = '\0';
    l->flag[l->n] = flag;
    l->n++;
}

static int find(const name_list *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->name[i], name))
            return i;
    return -1;
}

/* One statement at file scope (comments and preprocessor lines gone): a
 * function declaration goes into g_header. */
static void statement(const char *s, size_t len)
{
    while (len && isspace((unsigned char)*s))
        s++, len--;
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    if (!len || s[len - 1] != ')' || memchr(s, '{', len) ||
        (len > 7 && !strncmp(s, "typedef", 7) && !is_ident(s[7])))
        return;
    const char *open = memchr(s, '(', len);
    if (!open)
        return;
    const char *e = open;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    const char *b = e;
    while (b > s && is_ident(b[-1]))
        b--;
    int marked = !strncmp(s, "ET_API", 6) && isspace((unsigned char)s[6]);
    add(&g_header, b, (size_t)(e - b), marked);
}

/* Reads the header's declarations into g_header; 0, or -1 with why. */
static int parse_header(const char *path, char *why, size_t cap)
{
    size_t n = 0;
    char *text = slurp(path, &n);
    if (!text) {
        snprintf(why, cap, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    /* comments and string literals blanked (newlines kept) */
    for (size_t i = 0; i < n; i++) {
        if (text[i] == '/' && text[i + 1] == '*') {
            char *end = strstr(text + i + 2, "*/");
            size_t stop = end ? (size_t)(end - text) + 2 : n;
            for (; i < stop; i++)
                if (text[i] != '\n')
                    text[i] = ' ';
            i--;
        } else if (text[i] == '/' && text[i + 1] == '/') {
            for (; i < n && text[i] != '\n'; i++)
                text[i] = ' ';
        } else if (text[i] == '"') {
            for (text[i++] = ' '; i < n && text[i] != '"'; i++) {
                if (text[i] == '\\' && i + 1 < n)
                    text[i++] = ' ';
                text[i] = ' ';
            }
            if (i < n)
                text[i] = ' ';
        }
    }
    /* preprocessor lines, with their continuations */
    int bol = 1;
    for (size_t i = 0; i < n; i++) {
        if (bol) {
            size_t q = i;
            while (text[q] == ' ' || text[q] == '\t')
                q++;
            if (text[q] == '#') {
                for (; q < n && !(text[q] == '\n' && text[q - 1] != '\\');
                     q++)
                    text[q] = ' ';
                i = q;
                if (i >= n)
                    break;
            }
        }
        bol = text[i] == '\n';
    }
    /* statements at brace depth 0; extern "C" { ... } (its string blanked
     * above) is no block */
    size_t start = 0;
    int depth = 0, in_extern = 0;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (c == '{') {
            size_t b = start, e = i;
            while (b < e && isspace((unsigned char)text[b]))
                b++;
            while (e > b && isspace((unsigned char)text[e - 1]))
                e--;
            if (depth == 0 && e - b == 6 && !strncmp(text + b, "extern", 6)) {
                in_extern = 1;
                start = i + 1;
                continue;
            }
            depth++;
        } else if (c == '}') {
            if (depth == 0 && in_extern) {
                in_extern = 0;
                start = i + 1;
                continue;
            }
            depth--;
        } else if (c == ';' && depth == 0) {
            statement(text + start, i - start);
            start = i + 1;
        }
    }
    free(text);
    if (g_header.n == 0) {
        snprintf(why, cap, "no function declarations found in %s", path);
        return -1;
    }
    return 0;
}

/* Reads the defined dynamic symbols of the shared library into g_exports;
 * 0, or -1 with why. The library is of this machine's ELF class (ElfW). */
static int read_exports(const char *path, char *why, size_t cap)
{
    size_t n = 0;
    unsigned char *img = (unsigned char *)slurp(path, &n);
    if (!img) {
        snprintf(why, cap, "cannot read %s: %s (make builds it)", path,
                 strerror(errno));
        return -1;
    }
    int rc = -1;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)img;
    if (n < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64
                                                        : ELFCLASS32) ||
        eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff > n ||
        (n - eh->e_shoff) / sizeof(ElfW(Shdr)) < eh->e_shnum) {
        snprintf(why, cap, "%s: not an ELF file of this machine's class",
                 path);
        goto done;
    }
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(img + eh->e_shoff);
    const ElfW(Shdr) *dynsym = NULL;
    for (int i = 0; i < eh->e_shnum; i++)
        if (sh[i].sh_type == SHT_DYNSYM)
            dynsym = &sh[i];
    if (!dynsym || dynsym->sh_link >= eh->e_shnum ||
        dynsym->sh_entsize != sizeof(ElfW(Sym)) || dynsym->sh_offset > n ||
        n - dynsym->sh_offset < dynsym->sh_size) {
        snprintf(why, cap, "%s: no readable .dynsym section", path);
        goto done;
    }
    const ElfW(Shdr) *str = &sh[dynsym->sh_link];
    if (str->sh_offset > n || n - str->sh_offset < str->sh_size ||
        str->sh_size == 0 || img[str->sh_offset + str->sh_size - 1]) {
        snprintf(why, cap, "%s: no readable dynamic string table", path);
        goto done;
    }
    const ElfW(Sym) *sym = (const ElfW(Sym) *)(img + dynsym->sh_offset);
    size_t count = dynsym->sh_size / sizeof *sym;
    const char *names = (const char *)img + str->sh_offset;
    for (size_t i = 0; i < count; i++) {
        int bind = ELF64_ST_BIND(sym[i].st_info);
        int type = ELF64_ST_TYPE(sym[i].st_info);
        if (sym[i].st_shndx == SHN_UNDEF || sym[i].st_name >= str->sh_size ||
            (bind != STB_GLOBAL && bind != STB_WEAK) || type == STT_SECTION ||
            type == STT_FILE)
            continue;
        const char *name = names + sym[i].st_name;
        if (!*name)
            continue;
        add(&g_exports, name, strlen(name),
            type == STT_FUNC || type == STT_GNU_IFUNC);
    }
    rc = 0;
done:
    free(img);
    return rc;
}

static int group_setup(void **state)
{
    (void)state;
    const char *src = getenv("ET_SOURCE_DIR");
    const char *bd = getenv("ET_BUILD_DIR");
    snprintf(g_header_path, sizeof g_header_path, "%s/include/eintune.h",
             src && *src ? src : ".");
    snprintf(g_so_path, sizeof g_so_path, "%s/libeintune.so",
             bd && *bd ? bd : "build");
    char why[1300];
    if (parse_header(g_header_path, why, sizeof why) != 0 ||
        read_exports(g_so_path, why, sizeof why) != 0) {
        fprintf(stderr, "%s\n", why);
        return -1;
    }
    return 0;
}

/* Every declaration of the header carries the mark that exports it. */
static void test_header_marks(void **state)
{
    (void)state;
    int bad = 0;
    for (int i = 0; i < g_header.n; i++)
        if (!g_header.flag[i]) {
            print_message("%s: %s is declared without ET_API\n",
                          g_header_path, g_header.name[i]);
            bad++;
        }
    if (bad)
        fail_msg("%d declaration(s) of %s without ET_API", bad,
                 g_header_path);
}

/* Nothing leaves the library that the header does not declare. */
static void test_no_internal_exports(void **state)
{
    (void)state;
    int bad = 0;
    for (int i = 0; i < g_exports.n; i++)
        if (find(&g_header, g_exports.name[i]) < 0) {
            print_message("%s exports %s %s, which %s does not declare\n",
                          g_so_path,
                          g_exports.flag[i] ? "function" : "variable",
                          g_exports.name[i], g_header_path);
            bad++;
        }
    if (bad)
        fail_msg("%s exports %d symbol(s) that are not public API "
                 "(internal code is hidden: -fvisibility=hidden, public "
                 "functions marked ET_API)",
                 g_so_path, bad);
}

/* Everything the header declares leaves the library, as a function. */
static void test_declared_are_exported(void **state)
{
    (void)state;
    int bad = 0;
    for (int i = 0; i < g_header.n; i++) {
        int at = find(&g_exports, g_header.name[i]);
        if (at < 0 || !g_exports.flag[at]) {
            print_message("%s declares %s, which %s does not export%s\n",
                          g_header_path, g_header.name[i], g_so_path,
                          at < 0 ? "" : " as a function");
            bad++;
        }
    }
    if (bad)
        fail_msg("%d declared function(s) missing from %s", bad, g_so_path);
    print_message("%d functions declared, %d symbols exported\n",
                  g_header.n, g_exports.n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_marks),
        cmocka_unit_test(test_no_internal_exports),
        cmocka_unit_test(test_declared_are_exported),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
