/* hf_tree.h - the Hugging Face Hub's answers that the hf transport parses
 * (issue 39): one page of a repository's tree listing (GET
 * {endpoint}/api/datasets/ORG/NAME/tree/REV/PATH?recursive=true: a JSON
 * array of {"type": "file" | "directory", "path", "size", "oid", "lfs": {...}},
 * the next page named by the response's Link header, rel="next", as
 * GitHub's API does). Pure: the bytes in, the entries out, so that
 * tests/fuzz/fuzz_hf_tree.c drives it with any bytes.
 *
 * Thread rule: none (no state). Private to src/remote/. */
#ifndef RF_REMOTE_HF_TREE_H
#define RF_REMOTE_HF_TREE_H

#include <stddef.h>
#include <stdint.h>

/* The longest path kept; a longer one refuses the page. */
#define RF_HF_PATH_MAX 4096

/* Calls fn with each file of the page doc[0..len) (its path, escapes
 * decoded, and its size), in the page's order; directories are skipped.
 * @return : 0, fn's nonzero result (it stops the walk), or -EPROTO with
 *           err[errlen] saying what is not as the Hub writes it (not a JSON
 *           array of objects, a file without a path or a size, a path with
 *           a NUL, over RF_HF_PATH_MAX, nesting over 32 deep). */
int rfi_hf_tree_parse(const char *doc, size_t len,
		      int (*fn)(void *user, const char *path, uint64_t size), void *user,
		      char *err, size_t errlen);

/* The URL of a Link header's rel="next" ("<URL>; rel=\"next\"", one of
 * several comma-separated links) into out[outlen]. @return : 1 found, 0
 * none (or it did not fit). */
int rfi_hf_link_next(const char *link, char *out, size_t outlen);

#endif
