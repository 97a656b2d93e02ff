/* hf.h - the Hugging Face Hub as a transport (issue 39): locations
 * hf://datasets/ORG/NAME/PATH (a file, a folder ending in '/', or a glob:
 * '*' and '?' within a name, '**' across folders), @REVISION after NAME
 * (default main; refs/convert/parquet and refs/pr/N as they are, or
 * url-encoded), and hf://datasets/ORG/NAME alone for the dataset's Parquet
 * conversion (revision refs/convert/parquet, every file of it). Files are
 * listed through the Hub's tree endpoint (GET {endpoint}/api/datasets/
 * ORG/NAME/tree/REV/PATH?recursive=true, paginated by Link rel="next"),
 * read at {endpoint}/datasets/ORG/NAME/resolve/REV/PATH, whose 302 to the
 * CDN is followed without the token and kept until it expires
 * (presigned.h). The token (HF_TOKEN, else the file huggingface_hub
 * writes: $HF_TOKEN_PATH, $HF_HOME/token, ~/.cache/huggingface/token) is
 * sent as "Authorization: Bearer" to the endpoint (HF_ENDPOINT, default
 * https://huggingface.co) only. A private or gated dataset the Hub refuses
 * is refused at open, naming it.
 *
 * Thread rule: opened at set-up; read-only after (the kept redirects have
 * their own lock). Private to src/remote/ (the transport table's hf row). */
#ifndef RF_REMOTE_HF_H
#define RF_REMOTE_HF_H

#include <stddef.h>
#include <stdint.h>

#include "remote/sign.h"

#define RF_HF_ENDPOINT "https://huggingface.co"

typedef struct rf_hf {
	char *endpoint;   /* no trailing '/' */
	char *repo;       /* "ORG/NAME" */
	char *token;      /* a secret, or NULL: none (public datasets) */
	char *token_from; /* where it came from, for messages ("HF_TOKEN", a path) */
	struct rf_presigned *presigned;
	rf_io_sign sign;  /* the bearer token's header line, and presigned */
} rf_hf;

/* 1 when location is hf://. */
int rfi_hf_matches(const char *location);

/* Opens the dataset of location: endpoint, token, and the Hub asked once
 * whether the revision is there and readable. @return : 0, or a negative
 * errno with err set (-EACCES: the Hub refuses the dataset, named;
 * -ENOENT: no such dataset or revision; -EINVAL: not a location hf://
 * reads). */
int rfi_hf_open(rf_hf **out, const char *location, char *err, size_t errlen);
void rfi_hf_free(rf_hf *hf);

/* The resolve URL of location's file (malloc'd). @return : 0, 1 with err
 * set (another dataset than hf's), or a negative errno with err set. */
int rfi_hf_read_url(const rf_hf *hf, const char *location, char **out, char *err,
		    size_t errlen);

/* When location names many files (the dataset alone, a folder ending in
 * '/', a glob), the folder they are named relative to, as a location
 * ending in '/' with its revision spelt out (malloc'd) into *folder.
 * A location that is not one (hf://models/...) is its own "folder": the
 * transport's open then refuses it, saying why.
 * @return : 1, 0 (one file), or -ENOMEM. */
int rfi_hf_folder_of(const char *location, char **folder);

/* Calls fn with each file location names (rfi_hf_folder_of), relative to
 * its folder, in name order, with its size from the listing. @return : 0,
 * fn's nonzero, or a negative errno with err set. */
int rfi_hf_list(const rf_hf *hf, const char *location,
		int (*fn)(void *user, const char *name, uint64_t size), void *user,
		uint32_t budget_ms, char *err, size_t errlen);

/* What a failed read's message adds for res. */
const char *rfi_hf_hint(int res);

#endif
