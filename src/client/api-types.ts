/**
 * Generated from the OpenAPI document (GET /api/v1/openapi.json) by
 * openapi-typescript at build time (scripts/client-types.ts): do not edit.
 * test/client/types.test.ts fails when it differs from the served document.
 */
export interface paths {
    "/api/v1/protect": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Write the opt-out into the image metadata, losslessly
         * @description Writes plus:DataMining (keeping a DMI-PROHIBITED* value the file already carries, else DMI-PROHIBITED-AIMLTRAINING) and this deployment's signed provenance tag into the XMP; no other byte changes. The body is multipart/form-data with one part, `image` (at most 26214400 bytes). Counts toward the monthly protect limit; a call that does not return 200 counts nothing.
         */
        post: operations["protect"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/verify": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Check an image for the opt-out and other signals
         * @description Reads the opt-out, the other signals, the provenance tag and the experimental in-pixel fingerprint. The body is multipart/form-data with one part, `image` (at most 26214400 bytes). Counts toward the monthly verify limit; a call that does not return 200 counts nothing.
         */
        post: operations["verify"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/usage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This month's usage of the account behind the key (free of charge) */
        get: operations["usage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/records/{sha256}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The dated service records of files marked by the account on the dashboard, by the SHA-256 of the original or of the marked file (free of charge)
         * @description Every record of the key's account whose original or marked file has this SHA-256, with both signed JWS (check them with /.well-known/jwks.json). Any scope; counts toward no monthly limit. The API's protect makes no record: records come from the dashboard's marking. Another account's record is 404 record_not_found, as an unknown hash is.
         */
        get: operations["records"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/scans": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The account's recent scans (the 50 newest)
         * @description Any scope.
         */
        get: operations["listScans"];
        put?: never;
        /**
         * Scan a git repository: every JPEG, PNG and WebP image checked for the opt-out (docs/scans.md)
         * @description Accepted scans run from a queue; poll `links.self`. The URL must be under one of the deployment's allowed sources (by default https://github.com/, https://gitlab.com/, https://codeberg.org/). A read token, for a private repository, is used for this scan's fetch only: never stored, logged or echoed (such a scan runs on the server that accepted it; if that server stops first it ends failed and does not count). Needs the verify scope. Each image checked (opted out or not) draws one unit of the monthly verify limit; when it runs out the scan ends failed, keeping what it checked. Limits: scans per person per UTC day (10 by default: 429 scan_limit_reached, Retry-After until midnight UTC) and a service-wide daily ceiling (503 scans_paused for everyone, temporary, with Retry-After); a scan counts when it is accepted.
         */
        post: operations["createScan"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/scans/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A scan: its status, progress and, once ended, its summary
         * @description Any scope.
         */
        get: operations["getScan"];
        put?: never;
        post?: never;
        /**
         * Cancel a queued or running scan
         * @description Needs the verify scope. What it checked stays in its report; it still counts toward the day's scans. A scan that has ended is 409 scan_not_cancellable.
         */
        delete: operations["cancelScan"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/scans/{id}/report": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A scan's report: coverage and every image, as JSON or (Accept: text/csv) CSV
         * @description Any scope. Kept for the plan's report retention (90 days by default on Pro and Lifetime). CSV columns: path, status, reason, code, bytes, sha256, format, value, signals, provenancePresent, provenanceValid, fingerprintPresent.
         */
        get: operations["scanReport"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/scans/{id}/fix": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Mark the images a scan found without the opt-out: a zip keeping their paths, or one commit pushed on a new branch
         * @description Needs the protect scope: each file marked is one protect unit (the same marking as POST /api/v1/protect); all are reserved first, so a fix that cannot be paid in full does not start (429 quota_exceeded). `confirm` must be the number of images the fix marks (the report's notOptedOut), as a confirmation. The repository is fetched again at the scanned commit (a private one needs its token again: it was never kept) and a file is marked only if its bytes are still those checked. Without `push`: 200 application/zip, the marked files at their repository paths (plus FIX-REPORT.txt naming any not marked). With `push: true` and a token that may write: one commit "Add the IPTC Data Mining opt-out to N images" on a new branch optmark/opt-out-DATE-ID on top of the scanned commit, answered as JSON.
         */
        post: operations["fixScan"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/jwks.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The public Ed25519 keys (RFC 7517 JWK Set) that check this deployment's provenance tags, current and retired */
        get: operations["jwks"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Liveness: the process answers */
        get: operations["healthz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Readiness: the database answers too, within 2 seconds */
        get: operations["readyz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This document (OpenAPI 3.1) */
        get: operations["openapi"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        ProtectResult: {
            /** @description The marked image bytes */
            imageBase64: string;
            /**
             * @description Media type of the produced bytes
             * @enum {string}
             */
            mimeType: "image/jpeg" | "image/png" | "image/webp";
            /** @description Suggested file name; its extension matches the produced bytes */
            filename: string;
            /** @description SHA-256 of the marked bytes */
            sha256: string;
            /** @description Opt-out signals written: the IPTC/PLUS Data Mining field, the one protect writes */
            signals: "iptc.dataMining"[];
        };
        VerifyResult: {
            /** @description The image carries the IPTC/PLUS Data Mining opt-out (a DMI-PROHIBITED value) */
            optedOut: boolean;
            /** @description Opt-out signals found, when the file has a plus:DataMining field (whatever its value); an empty array when the field is absent, whatever other vocabularies say (?detail=full shows them). Only iptc.dataMining decides optedOut */
            signals: ("iptc.dataMining" | "tdmrep.reservation" | "cawg.trainingMining" | "c2pa.trainingMining")[];
            /** @description This service's signed provenance tag: present in the file, checkable with this server's keys, valid for the file (docs/provenance.md) */
            provenance: {
                present: boolean;
                valid: boolean;
                verifiable: boolean;
            };
            /** @description Experimental in-pixel detector: present at a false-positive probability of at most 1e-6 per check; confidence is the share of the voting blocks that match (about 0.5 without the mark), blocks the number that voted (0 when none could: no fingerprint key, an image under 64 pixels a side, flat, or too large to decode). Evidence for this deployment's key, not proof of authorship (docs/fingerprint.md) */
            fingerprint: {
                present: boolean;
                confidence: number;
                blocks: number;
            };
            /** @description SHA-256 of the uploaded bytes */
            sha256: string;
            /** @description Only with ?detail=full: everything verify found, in every vocabulary, whether or not the file has the IPTC field */
            details?: {
                /** @enum {string} */
                format: "jpeg" | "png" | "webp";
                /** @enum {string} */
                mimeType: "image/jpeg" | "image/png" | "image/webp";
                /** @description Every opt-out signal found, also when plus:DataMining is absent (the answer's signals is then []) */
                signals: ("iptc.dataMining" | "tdmrep.reservation" | "cawg.trainingMining" | "c2pa.trainingMining")[];
                /** @description Every plus:DataMining occurrence, standard packet first; more than one is a defect (warned about) */
                dataMining: {
                    /** @description As stored, surrounding whitespace removed */
                    value: string;
                    /** @description The PLUS vocabulary code (DMI-...) when the value is exactly its http:// URI */
                    code: string | null;
                    /** @description The code's IPTC description */
                    label: string | null;
                    /** @description One of the seven DMI-PROHIBITED* URIs: this occurrence opts out */
                    prohibited: boolean;
                    /**
                     * @description How the RDF writes it
                     * @enum {string}
                     */
                    form: "element" | "attribute" | "resource";
                    /** @description Held in JPEG Extended XMP */
                    extended: boolean;
                }[];
                /** @description plus:OtherConstraints (x-default), the readable companion of DMI-PROHIBITED-SEECONSTRAINT */
                otherConstraints: string | null;
                /** @description W3C TDMRep in the XMP, as stored; a reservation of exactly 1 is the tdmrep.reservation signal */
                tdmrep: {
                    reservation: string | null;
                    policy: string | null;
                };
                /** @description The C2PA manifest store. Its signature is not checked against any trust list: a signal says what the file claims (docs/provenance.md) */
                c2pa: {
                    /** @description The file carries a manifest store */
                    present: boolean;
                    /** @description The store could be parsed (a broken or hostile one is ignored) */
                    readable: boolean;
                    /** @description The active manifest's training-and-data-mining assertions */
                    trainingMining: {
                        /** @enum {string} */
                        assertion: "cawg.training-mining" | "c2pa.training-mining";
                        /** @description Each use named (cawg.ai_training, ...) and its choice (allowed, notAllowed, constrained) */
                        entries: {
                            [key: string]: string;
                        };
                        /**
                         * @description The signal it makes, or null when no AI-training or data-mining use is notAllowed or constrained
                         * @enum {string|null}
                         */
                        signal: "cawg.trainingMining" | "c2pa.trainingMining" | null;
                    }[];
                };
                /** @description Defects found, in words: several values, a value that only looks like a vocabulary term, repeated properties Adobe-based readers reject, misplaced XMP, ... */
                warnings: string[];
            };
        };
        Usage: {
            protect: {
                used: number;
                limit: number;
                remaining: number;
            };
            verify: {
                used: number;
                limit: number;
                remaining: number;
            };
            /**
             * Format: date-time
             * @description Start of the next calendar month, UTC
             */
            resetsAt: string;
        };
        Records: {
            /** @description Every record of the account whose original or marked SHA-256 is the one asked for, oldest first (at most 100) */
            records: {
                recordId: string;
                /**
                 * Format: date-time
                 * @description When the file was marked (UTC, to the millisecond); the JWS's iat is its second
                 */
                createdAt: string;
                /** @description The name the file was uploaded with (empty when it had none) */
                fileName: string;
                /** @description SHA-256 of the file as uploaded */
                sha256Original: string;
                /** @description SHA-256 of the marked file the service returned */
                sha256Marked: string;
                /**
                 * @description The plus:DataMining code the marked file carries
                 * @enum {string}
                 */
                value: "DMI-PROHIBITED-AIMLTRAINING" | "DMI-PROHIBITED-GENAIMLTRAINING" | "DMI-PROHIBITED-EXCEPTSEARCHENGINEINDEXING" | "DMI-PROHIBITED" | "DMI-PROHIBITED-SEECONSTRAINT" | "DMI-PROHIBITED-SEEEMBEDDEDRIGHTSEXPR" | "DMI-PROHIBITED-SEELINKEDRIGHTSEXPR";
                /** @description Layers applied besides the opt-out and the provenance tag (empty: none) */
                layers: {
                    /**
                     * @description The experimental in-pixel fingerprint
                     * @enum {string}
                     */
                    name: "fingerprint";
                    /**
                     * @description `added` by this marking, or `found` already in the pixels (and not added again)
                     * @enum {string}
                     */
                    state: "added" | "found";
                    /** @description The version of the fingerprint secret of the mark (null when not known) */
                    keyVersion: number | null;
                }[];
                /** @description The key id of the marked file's provenance tag; the JWKS holds its public key */
                kid: string;
                /** @description The email of the person who marked the file, as it was then */
                user: string;
                /** @description The dashboard batch the file was marked in (null: marked on its own) */
                batchId: string | null;
                /** @description The record signed by the service with its provenance key ring (EdDSA, Ed25519): verify both with /.well-known/jwks.json */
                jws: {
                    /** @description Compact JWS of {recordId, iat, sha256Marked, value, layers, kid, iss}: what the public lookup shows */
                    public: string;
                    /** @description Compact JWS of {recordId, iat, account, user, fileName, sha256Original, batchId, publicJwsSha256, kid, iss}: the rest, bound to the public one by its SHA-256 */
                    private: string;
                };
            }[];
        };
        Scan: {
            id: string;
            /** @enum {string} */
            status: "queued" | "running" | "done" | "failed" | "cancelled";
            /** @description The URL as given (never with credentials) */
            repository: string;
            /** @description The branch or tag asked for; null: the default branch */
            ref: string | null;
            /** @description The commit scanned, once fetched */
            commit: string | null;
            /** @description Submitted with a read token (never stored: held in the accepting server's memory for this scan only) */
            withToken: boolean;
            /** Format: date-time */
            createdAt: string;
            /** Format: date-time */
            startedAt: string | null;
            /** Format: date-time */
            finishedAt: string | null;
            /**
             * Format: date-time
             * @description The report is removed after this (the plan's report retention: 90 days by default on Pro and Lifetime)
             */
            expiresAt: string;
            /** @description Why it failed or was cancelled, in words */
            reason: string | null;
            progress: {
                /** @description Files in the tree (null until fetched) */
                files: number | null;
                processed: number;
                /** @description Candidate images reported so far */
                imagesChecked: number;
            };
            /** @description Milliseconds the fetch took */
            fetchMs: number | null;
            /** @description Once the scan has ended (done, failed or cancelled); null before */
            summary: components["schemas"]["ScanSummary"] | null;
            /** @description Files that are not candidate images (counted only) */
            otherFiles: number;
            links: {
                self: string;
                report: string;
            };
        };
        /** @description images = optedOut + notOptedOut + failed + skipped. A candidate image is a file (outside .git) named .jpg/.jpeg/.png/.webp or whose bytes begin as one; skipped: over 25 MB, a Git LFS pointer, a symbolic link (never followed), over the pixel limit. Only optedOut and notOptedOut drew on the monthly verify limit. */
        ScanSummary: {
            images: number;
            optedOut: number;
            notOptedOut: number;
            failed: number;
            skipped: number;
        };
        ScanItem: {
            path: string;
            /** @enum {string} */
            status: "optedOut" | "notOptedOut" | "failed" | "skipped";
            reason: string | null;
            /** @description failed: the error code (corrupt_image, ...); skipped: symlink, lfs_pointer, too_large, too_deep, too_many_pixels */
            code: string | null;
            bytes: number;
            sha256: string | null;
            /** @enum {string|null} */
            format: "jpeg" | "png" | "webp" | null;
            /** @description Every opt-out signal found, in every vocabulary */
            signals: string[];
            /** @description The plus:DataMining value, as stored */
            value: string | null;
            provenance: null | {
                present: boolean;
                valid: boolean;
                verifiable: boolean;
            };
            fingerprint: null | {
                present: boolean;
                confidence: number;
            };
        };
        ScanReport: {
            scan: components["schemas"]["Scan"];
            coverage: {
                optedOut: number;
                images: number;
                /** @description optedOut / images (1 when there are no images) */
                ratio: number;
            };
            items: components["schemas"]["ScanItem"][];
        };
        Error: {
            /** @description A readable message */
            error: string;
            /**
             * @description Stable machine-readable code (docs/errors.md)
             * @enum {string}
             */
            code: "empty_image" | "malformed_request" | "missing_image_part" | "multiple_parts" | "invalid_option" | "invalid_sha256" | "missing_api_key" | "invalid_api_key" | "plan_not_allowed" | "scope_not_allowed" | "not_signed_in" | "invalid_credentials" | "cross_site_request" | "role_not_allowed" | "not_found" | "account_not_found" | "key_not_found" | "user_not_found" | "link_not_valid" | "batch_not_found" | "access_request_not_found" | "record_not_found" | "scan_not_found" | "vault_file_not_found" | "method_not_allowed" | "request_timeout" | "account_exists" | "too_many_keys" | "user_exists" | "batch_full" | "access_request_exists" | "access_request_not_pending" | "grant_not_available" | "scan_not_cancellable" | "scan_not_finished" | "image_too_large" | "body_too_large" | "unsupported_content_type" | "unsupported_image_format" | "corrupt_image" | "image_dimensions_too_large" | "fingerprint_not_possible" | "invalid_xmp" | "ambiguous_xmp" | "password_not_accepted" | "idempotency_key_reused" | "source_not_allowed" | "conflicting_xmp" | "quota_exceeded" | "too_many_requests" | "too_many_failed_calls" | "scan_limit_reached" | "header_too_large" | "internal_error" | "vault_file_unreadable" | "repository_unavailable" | "service_unavailable" | "server_busy" | "scans_paused";
            /** @description Also in the Request-Id header and the server logs */
            requestId: string;
        };
        Health: {
            /** @enum {string} */
            status: "ok";
        };
        /** @description An Ed25519 public key (RFC 8037); `kid` is its RFC 7638 thumbprint, as named in the provenance tags it checks */
        Jwk: {
            /** @constant */
            kty: "OKP";
            /** @constant */
            crv: "Ed25519";
            /** @description The public key, base64url (32 bytes) */
            x: string;
            kid: string;
            /** @constant */
            alg: "EdDSA";
            /** @constant */
            use: "sig";
        };
        Jwks: {
            /** @description The active key and every retired one */
            keys: components["schemas"]["Jwk"][];
        };
    };
    responses: {
        /** @description Any other failure, in the same shape: 500 `internal_error` (a bug; the log has it under the request id), 503 `service_unavailable` while the server stops, 400/408 from the HTTP parser */
        Unexpected: {
            headers: {
                "Request-Id": components["headers"]["Request-Id"];
                "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description Any path not in this document: 404 `not_found` */
        NotFound: {
            headers: {
                "Request-Id": components["headers"]["Request-Id"];
                "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"] & {
                    /** @enum {string} */
                    code?: "not_found";
                };
            };
        };
        /** @description A path of this document with another method: 405 `method_not_allowed`; `Allow` names the methods it takes */
        MethodNotAllowed: {
            headers: {
                "Request-Id": components["headers"]["Request-Id"];
                "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                Allow: components["headers"]["Allow"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"] & {
                    /** @enum {string} */
                    code?: "method_not_allowed";
                };
            };
        };
    };
    parameters: never;
    requestBodies: never;
    headers: {
        /**
         * @description Identifier of this request, also in error bodies and the server log; a `Request-Id` sent by the client (1 to 128 of `A-Za-z0-9._:-`) is used instead
         * @example 5af1d77c-1ca2-4e05-bee5-819a9cbb3b65
         */
        "Request-Id": string;
        /**
         * @description Browsers must not guess a type
         * @example nosniff
         */
        "X-Content-Type-Options": "nosniff";
        /**
         * @description Remaining allowance (r) and seconds until it resets (t), per operation (draft-ietf-httpapi-ratelimit-headers-11); sent once the key's unit is reserved (not on a replayed answer, which counts nothing)
         * @example "protect";r=9999;t=761312
         */
        RateLimit: string;
        /**
         * @description Monthly quota (q) and the length of this month in seconds (w), per operation (draft-ietf-httpapi-ratelimit-headers-11)
         * @example "protect";q=10000;w=2592000
         */
        "RateLimit-Policy": string;
        /**
         * @description Remaining allowance (r) and seconds until it resets (t), per operation (draft-ietf-httpapi-ratelimit-headers-11)
         * @example "protect";r=9999;t=761312
         */
        RateLimitRequired: string;
        /**
         * @description Monthly quota (q) and the length of this month in seconds (w), per operation (draft-ietf-httpapi-ratelimit-headers-11)
         * @example "protect";q=10000;w=2592000
         */
        RateLimitPolicyRequired: string;
        /**
         * @description Seconds to wait before trying again (quota_exceeded: until the next UTC month)
         * @example 1
         */
        "Retry-After": string;
        /**
         * @description The authentication scheme to use
         * @example Bearer
         */
        "WWW-Authenticate": "Bearer";
        /**
         * @description The methods the path takes
         * @example POST
         */
        Allow: string;
        /**
         * @description The server closes the connection after this answer (the rest of the upload is not read)
         * @example close
         */
        Connection: "close";
        /**
         * @description `true` when the answer repeats an earlier call with the same Idempotency-Key (nothing was counted)
         * @example true
         */
        "Idempotent-Replayed": "true";
        /**
         * @description `kept CODE` when the upload already carried that DMI-PROHIBITED* value (protect keeps an opt-out the file carries); `written CODE` otherwise, CODE being then DMI-PROHIBITED-AIMLTRAINING.
         * @example written DMI-PROHIBITED-AIMLTRAINING
         */
        "Optmark-Opt-Out": string;
        /**
         * @description `invalidated` when the upload carried a C2PA manifest: writing the XMP changes bytes its hard binding covers, so the marked copy's manifest no longer validates (docs/provenance.md). Absent otherwise.
         * @example invalidated
         */
        "Optmark-C2PA-Manifest": "invalidated";
        /**
         * @description How long the key set may be cached
         * @example public, max-age=300
         */
        "Cache-Control": string;
        /**
         * @description The new scan
         * @example /api/v1/scans/scn_0f3a9c2b7e4d1a6c5b8e9f0a1d2c3b4e
         */
        Location: string;
        /**
         * @description The zip's file name (the zip answer only)
         * @example attachment; filename="scn_0f3a9c2b7e4d1a6c5b8e9f0a1d2c3b4e-fix.zip"
         */
        "Content-Disposition": string;
        /**
         * @description How many images could not be marked (named in the zip's FIX-REPORT.txt; the zip answer only)
         * @example 0
         */
        "X-Optmark-Fix-Failed": string;
    };
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    protect: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description Makes a retry safe. Within 24 hours, a call with the same key, the same image bytes and the same options as an earlier call of the account gets that call's answer again (a 200 computed again from the image sent, the same bytes for protect; a refusal as it was), with `Idempotent-Replayed: true`, and counts nothing; one sent while the first runs waits for it (503 server_busy with Retry-After if the first still runs after the request timeout); a first call whose client went away before its answer leaves the key free. The same key with another image or options is 422 idempotency_key_reused. A malformed key is 400 invalid_option.
                 * @example optmark-protect-3f0c8a9d2b7e4c1f0a6d5e8b9c2f1a0e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a
                 */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        /** @description One multipart part, `image`: the file. Its declared type and file name decide nothing (the bytes do); the name only names the marked copy. */
        requestBody: {
            content: {
                "multipart/form-data": {
                    /**
                     * Format: binary
                     * @description JPEG, PNG or WebP, judged by its bytes
                     */
                    image: Blob;
                };
            };
        };
        responses: {
            /** @description The marked image. Save it under `filename` (its extension is that of the bytes produced), never under the input's name. */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Optmark-Opt-Out": components["headers"]["Optmark-Opt-Out"];
                    "Optmark-C2PA-Manifest": components["headers"]["Optmark-C2PA-Manifest"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProtectResult"];
                };
            };
            /** @description The request is not what the operation takes: `malformed_request`, `missing_image_part`, `multiple_parts`, `empty_image`, `invalid_option` */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "malformed_request" | "missing_image_part" | "multiple_parts" | "empty_image" | "invalid_option";
                    };
                };
            };
            /** @description No valid API key: `missing_api_key`, `invalid_api_key` */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "missing_api_key" | "invalid_api_key";
                    };
                };
            };
            /** @description The key may not call this operation: `plan_not_allowed`, `scope_not_allowed` */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "plan_not_allowed" | "scope_not_allowed";
                    };
                };
            };
            /** @description The request did not arrive in time; the connection is closed: `request_timeout` */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "request_timeout";
                    };
                };
            };
            /** @description The image, or a JSON body, is over its limit; the connection is closed: `image_too_large` */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "image_too_large";
                    };
                };
            };
            /** @description The body is not of the type the operation takes (multipart/form-data for an image, JSON for a scan), or the bytes are not JPEG, PNG or WebP: `unsupported_content_type`, `unsupported_image_format` */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "unsupported_content_type" | "unsupported_image_format";
                    };
                };
            };
            /** @description A JPEG, PNG or WebP whose container or XMP cannot be used, or an Idempotency-Key used for another image: `corrupt_image`, `image_dimensions_too_large`, `invalid_xmp`, `ambiguous_xmp`, `conflicting_xmp`, `idempotency_key_reused` */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "corrupt_image" | "image_dimensions_too_large" | "invalid_xmp" | "ambiguous_xmp" | "conflicting_xmp" | "idempotency_key_reused";
                    };
                };
            };
            /** @description The monthly limit is reached (quota_exceeded: Retry-After is the seconds to the next UTC month; do not retry before), or too many calls at once or invalid keys from this address (too_many_requests: retry after Retry-After), or the account's failed calls cost too much work this minute (too_many_failed_calls: retry after Retry-After): `quota_exceeded`, `too_many_requests`, `too_many_failed_calls` */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "quota_exceeded" | "too_many_requests" | "too_many_failed_calls";
                    };
                };
            };
            /** @description The request headers are over 16 KiB; the connection is closed: `header_too_large` */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "header_too_large";
                    };
                };
            };
            /** @description The database is unavailable, the server is stopping or at capacity: retry after Retry-After; or new repository scans are paused for everyone (scans_paused: temporary, service-wide; Retry-After says when to try again): `service_unavailable`, `server_busy` */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "service_unavailable" | "server_busy";
                    };
                };
            };
            default: components["responses"]["Unexpected"];
        };
    };
    verify: {
        parameters: {
            query?: {
                /**
                 * @description `full` adds `details` to the answer: every signal found in every vocabulary (also when the file has no plus:DataMining, when `signals` is []), each plus:DataMining value, TDMRep, the C2PA summary and warnings. Without it the answer is exactly the specification's. Any other parameter or value is invalid_option (400).
                 * @example full
                 */
                detail?: "full";
            };
            header?: {
                /**
                 * @description Makes a retry safe. Within 24 hours, a call with the same key, the same image bytes and the same options as an earlier call of the account gets that call's answer again (a 200 computed again from the image sent, the same bytes for protect; a refusal as it was), with `Idempotent-Replayed: true`, and counts nothing; one sent while the first runs waits for it (503 server_busy with Retry-After if the first still runs after the request timeout); a first call whose client went away before its answer leaves the key free. The same key with another image or options is 422 idempotency_key_reused. A malformed key is 400 invalid_option.
                 * @example optmark-protect-3f0c8a9d2b7e4c1f0a6d5e8b9c2f1a0e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a
                 */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        /** @description One multipart part, `image`: the file. Its declared type and file name decide nothing (the bytes do); the name only names the marked copy. */
        requestBody: {
            content: {
                "multipart/form-data": {
                    /**
                     * Format: binary
                     * @description JPEG, PNG or WebP, judged by its bytes
                     */
                    image: Blob;
                };
            };
        };
        responses: {
            /** @description What the image carries */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["VerifyResult"];
                };
            };
            /** @description The request is not what the operation takes: `malformed_request`, `missing_image_part`, `multiple_parts`, `empty_image`, `invalid_option` */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "malformed_request" | "missing_image_part" | "multiple_parts" | "empty_image" | "invalid_option";
                    };
                };
            };
            /** @description No valid API key: `missing_api_key`, `invalid_api_key` */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "missing_api_key" | "invalid_api_key";
                    };
                };
            };
            /** @description The key may not call this operation: `plan_not_allowed`, `scope_not_allowed` */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "plan_not_allowed" | "scope_not_allowed";
                    };
                };
            };
            /** @description The request did not arrive in time; the connection is closed: `request_timeout` */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "request_timeout";
                    };
                };
            };
            /** @description The image, or a JSON body, is over its limit; the connection is closed: `image_too_large` */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "image_too_large";
                    };
                };
            };
            /** @description The body is not of the type the operation takes (multipart/form-data for an image, JSON for a scan), or the bytes are not JPEG, PNG or WebP: `unsupported_content_type`, `unsupported_image_format` */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "unsupported_content_type" | "unsupported_image_format";
                    };
                };
            };
            /** @description A JPEG, PNG or WebP whose container or XMP cannot be used, or an Idempotency-Key used for another image: `corrupt_image`, `image_dimensions_too_large`, `invalid_xmp`, `idempotency_key_reused` */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "corrupt_image" | "image_dimensions_too_large" | "invalid_xmp" | "idempotency_key_reused";
                    };
                };
            };
            /** @description The monthly limit is reached (quota_exceeded: Retry-After is the seconds to the next UTC month; do not retry before), or too many calls at once or invalid keys from this address (too_many_requests: retry after Retry-After), or the account's failed calls cost too much work this minute (too_many_failed_calls: retry after Retry-After): `quota_exceeded`, `too_many_requests`, `too_many_failed_calls` */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "quota_exceeded" | "too_many_requests" | "too_many_failed_calls";
                    };
                };
            };
            /** @description The request headers are over 16 KiB; the connection is closed: `header_too_large` */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "header_too_large";
                    };
                };
            };
            /** @description The database is unavailable, the server is stopping or at capacity: retry after Retry-After; or new repository scans are paused for everyone (scans_paused: temporary, service-wide; Retry-After says when to try again): `service_unavailable`, `server_busy` */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "service_unavailable" | "server_busy";
                    };
                };
            };
            default: components["responses"]["Unexpected"];
        };
    };
    usage: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Used, limit and remaining per operation */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimitRequired"];
                    "RateLimit-Policy": components["headers"]["RateLimitPolicyRequired"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Usage"];
                };
            };
            /** @description The request is not what the operation takes: `malformed_request` */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "malformed_request";
                    };
                };
            };
            /** @description No valid API key: `missing_api_key`, `invalid_api_key` */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "missing_api_key" | "invalid_api_key";
                    };
                };
            };
            /** @description The key may not call this operation: `plan_not_allowed` */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "plan_not_allowed";
                    };
                };
            };
            /** @description The monthly limit is reached (quota_exceeded: Retry-After is the seconds to the next UTC month; do not retry before), or too many calls at once or invalid keys from this address (too_many_requests: retry after Retry-After), or the account's failed calls cost too much work this minute (too_many_failed_calls: retry after Retry-After): `too_many_requests` */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "too_many_requests";
                    };
                };
            };
            /** @description The request headers are over 16 KiB; the connection is closed: `header_too_large` */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "header_too_large";
                    };
                };
            };
            /** @description The database is unavailable, the server is stopping or at capacity: retry after Retry-After; or new repository scans are paused for everyone (scans_paused: temporary, service-wide; Retry-After says when to try again): `service_unavailable` */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "service_unavailable";
                    };
                };
            };
            default: components["responses"]["Unexpected"];
        };
    };
    records: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The SHA-256 of the original or of the marked file, 64 hexadecimal characters (any case). Anything else is 400 invalid_sha256.
                 * @example 9f2c6a1e4b7d0c3f8a5e2d9b6c1f4a7e0d3b8c5f2a9e6d1c4b7f0a3e8d5c2b9f
                 */
                sha256: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The records, oldest first */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Records"];
                };
            };
            /** @description The request is not what the operation takes: `malformed_request`, `invalid_sha256` */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "malformed_request" | "invalid_sha256";
                    };
                };
            };
            /** @description No valid API key: `missing_api_key`, `invalid_api_key` */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "missing_api_key" | "invalid_api_key";
                    };
                };
            };
            /** @description The key may not call this operation: `plan_not_allowed` */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "plan_not_allowed";
                    };
                };
            };
            /** @description Nothing of the account's was found: `record_not_found` */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "record_not_found";
                    };
                };
            };
            /** @description The monthly limit is reached (quota_exceeded: Retry-After is the seconds to the next UTC month; do not retry before), or too many calls at once or invalid keys from this address (too_many_requests: retry after Retry-After), or the account's failed calls cost too much work this minute (too_many_failed_calls: retry after Retry-After): `too_many_requests` */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "too_many_requests";
                    };
                };
            };
            /** @description The request headers are over 16 KiB; the connection is closed: `header_too_large` */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "header_too_large";
                    };
                };
            };
            /** @description The database is unavailable, the server is stopping or at capacity: retry after Retry-After; or new repository scans are paused for everyone (scans_paused: temporary, service-wide; Retry-After says when to try again): `service_unavailable` */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "service_unavailable";
                    };
                };
            };
            default: components["responses"]["Unexpected"];
        };
    };
    listScans: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The scans, newest first */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        scans: components["schemas"]["Scan"][];
                    };
                };
            };
            /** @description The request is not what the operation takes: `malformed_request` */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "malformed_request";
                    };
                };
            };
            /** @description No valid API key: `missing_api_key`, `invalid_api_key` */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "missing_api_key" | "invalid_api_key";
                    };
                };
            };
            /** @description The key may not call this operation: `plan_not_allowed` */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "plan_not_allowed";
                    };
                };
            };
            /** @description The monthly limit is reached (quota_exceeded: Retry-After is the seconds to the next UTC month; do not retry before), or too many calls at once or invalid keys from this address (too_many_requests: retry after Retry-After), or the account's failed calls cost too much work this minute (too_many_failed_calls: retry after Retry-After): `too_many_requests` */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "too_many_requests";
                    };
                };
            };
            /** @description The request headers are over 16 KiB; the connection is closed: `header_too_large` */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "header_too_large";
                    };
                };
            };
            /** @description The database is unavailable, the server is stopping or at capacity: retry after Retry-After; or new repository scans are paused for everyone (scans_paused: temporary, service-wide; Retry-After says when to try again): `service_unavailable` */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "service_unavailable";
                    };
                };
            };
            default: components["responses"]["Unexpected"];
        };
    };
    createScan: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description The repository, and optionally a branch or tag and a read token */
        requestBody: {
            content: {
                "application/json": {
                    /** @description The clone URL (https://, or another scheme the deployment lists); no credentials in it */
                    repository: string;
                    /** @description A branch or tag; default the repository's default branch */
                    ref?: string | null;
                    /** @description A read token for a private repository (sent to its server as HTTP Basic authentication); never stored */
                    token?: string | null;
                };
            };
        };
        responses: {
            /** @description Accepted; `Location` is the scan */
            202: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Location: components["headers"]["Location"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        id: string;
                        /** @enum {string} */
                        status: "queued" | "running" | "done" | "failed" | "cancelled";
                        links: {
                            self: string;
                            report: string;
                        };
                    };
                };
            };
            /** @description The request is not what the operation takes: `malformed_request`, `invalid_option` */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "malformed_request" | "invalid_option";
                    };
                };
            };
            /** @description No valid API key: `missing_api_key`, `invalid_api_key` */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "missing_api_key" | "invalid_api_key";
                    };
                };
            };
            /** @description The key may not call this operation: `plan_not_allowed`, `scope_not_allowed`, `role_not_allowed` */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "plan_not_allowed" | "scope_not_allowed" | "role_not_allowed";
                    };
                };
            };
            /** @description The image, or a JSON body, is over its limit; the connection is closed: `body_too_large`, `image_too_large` */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "body_too_large" | "image_too_large";
                    };
                };
            };
            /** @description The body is not of the type the operation takes (multipart/form-data for an image, JSON for a scan), or the bytes are not JPEG, PNG or WebP: `unsupported_content_type` */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "unsupported_content_type";
                    };
                };
            };
            /** @description A JPEG, PNG or WebP whose container or XMP cannot be used, or an Idempotency-Key used for another image: `source_not_allowed` */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "source_not_allowed";
                    };
                };
            };
            /** @description The monthly limit is reached (quota_exceeded: Retry-After is the seconds to the next UTC month; do not retry before), or too many calls at once or invalid keys from this address (too_many_requests: retry after Retry-After), or the account's failed calls cost too much work this minute (too_many_failed_calls: retry after Retry-After): `scan_limit_reached`, `too_many_requests` */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "scan_limit_reached" | "too_many_requests";
                    };
                };
            };
            /** @description The request headers are over 16 KiB; the connection is closed: `header_too_large` */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "header_too_large";
                    };
                };
            };
            /** @description The database is unavailable, the server is stopping or at capacity: retry after Retry-After; or new repository scans are paused for everyone (scans_paused: temporary, service-wide; Retry-After says when to try again): `service_unavailable`, `scans_paused` */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "service_unavailable" | "scans_paused";
                    };
                };
            };
            default: components["responses"]["Unexpected"];
        };
    };
    getScan: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The scan's id, as POST /api/v1/scans answered it. Another account's scan is 404 scan_not_found, as an unknown id is.
                 * @example scn_0f3a9c2b7e4d1a6c5b8e9f0a1d2c3b4e
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The scan */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Scan"];
                };
            };
            /** @description The request is not what the operation takes: `malformed_request` */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "malformed_request";
                    };
                };
            };
            /** @description No valid API key: `missing_api_key`, `invalid_api_key` */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "missing_api_key" | "invalid_api_key";
                    };
                };
            };
            /** @description The key may not call this operation: `plan_not_allowed` */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "plan_not_allowed";
                    };
                };
            };
            /** @description Nothing of the account's was found: `scan_not_found` */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "scan_not_found";
                    };
                };
            };
            /** @description The monthly limit is reached (quota_exceeded: Retry-After is the seconds to the next UTC month; do not retry before), or too many calls at once or invalid keys from this address (too_many_requests: retry after Retry-After), or the account's failed calls cost too much work this minute (too_many_failed_calls: retry after Retry-After): `too_many_requests` */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "too_many_requests";
                    };
                };
            };
            /** @description The request headers are over 16 KiB; the connection is closed: `header_too_large` */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "header_too_large";
                    };
                };
            };
            /** @description The database is unavailable, the server is stopping or at capacity: retry after Retry-After; or new repository scans are paused for everyone (scans_paused: temporary, service-wide; Retry-After says when to try again): `service_unavailable` */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "service_unavailable";
                    };
                };
            };
            default: components["responses"]["Unexpected"];
        };
    };
    cancelScan: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The scan's id, as POST /api/v1/scans answered it. Another account's scan is 404 scan_not_found, as an unknown id is.
                 * @example scn_0f3a9c2b7e4d1a6c5b8e9f0a1d2c3b4e
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The scan, cancelled */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Scan"];
                };
            };
            /** @description The request is not what the operation takes: `malformed_request` */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "malformed_request";
                    };
                };
            };
            /** @description No valid API key: `missing_api_key`, `invalid_api_key` */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "missing_api_key" | "invalid_api_key";
                    };
                };
            };
            /** @description The key may not call this operation: `plan_not_allowed`, `scope_not_allowed` */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "plan_not_allowed" | "scope_not_allowed";
                    };
                };
            };
            /** @description Nothing of the account's was found: `scan_not_found` */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "scan_not_found";
                    };
                };
            };
            /** @description The scan is not in a state that allows it: `scan_not_cancellable` */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "scan_not_cancellable";
                    };
                };
            };
            /** @description The body is not of the type the operation takes (multipart/form-data for an image, JSON for a scan), or the bytes are not JPEG, PNG or WebP: `unsupported_content_type` */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "unsupported_content_type";
                    };
                };
            };
            /** @description The monthly limit is reached (quota_exceeded: Retry-After is the seconds to the next UTC month; do not retry before), or too many calls at once or invalid keys from this address (too_many_requests: retry after Retry-After), or the account's failed calls cost too much work this minute (too_many_failed_calls: retry after Retry-After): `too_many_requests` */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "too_many_requests";
                    };
                };
            };
            /** @description The request headers are over 16 KiB; the connection is closed: `header_too_large` */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "header_too_large";
                    };
                };
            };
            /** @description The database is unavailable, the server is stopping or at capacity: retry after Retry-After; or new repository scans are paused for everyone (scans_paused: temporary, service-wide; Retry-After says when to try again): `service_unavailable` */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "service_unavailable";
                    };
                };
            };
            default: components["responses"]["Unexpected"];
        };
    };
    scanReport: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The scan's id, as POST /api/v1/scans answered it. Another account's scan is 404 scan_not_found, as an unknown id is.
                 * @example scn_0f3a9c2b7e4d1a6c5b8e9f0a1d2c3b4e
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The report */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScanReport"];
                    "text/csv": string;
                };
            };
            /** @description The request is not what the operation takes: `malformed_request` */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "malformed_request";
                    };
                };
            };
            /** @description No valid API key: `missing_api_key`, `invalid_api_key` */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "missing_api_key" | "invalid_api_key";
                    };
                };
            };
            /** @description The key may not call this operation: `plan_not_allowed` */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "plan_not_allowed";
                    };
                };
            };
            /** @description Nothing of the account's was found: `scan_not_found` */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "scan_not_found";
                    };
                };
            };
            /** @description The monthly limit is reached (quota_exceeded: Retry-After is the seconds to the next UTC month; do not retry before), or too many calls at once or invalid keys from this address (too_many_requests: retry after Retry-After), or the account's failed calls cost too much work this minute (too_many_failed_calls: retry after Retry-After): `too_many_requests` */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "too_many_requests";
                    };
                };
            };
            /** @description The request headers are over 16 KiB; the connection is closed: `header_too_large` */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "header_too_large";
                    };
                };
            };
            /** @description The database is unavailable, the server is stopping or at capacity: retry after Retry-After; or new repository scans are paused for everyone (scans_paused: temporary, service-wide; Retry-After says when to try again): `service_unavailable` */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "service_unavailable";
                    };
                };
            };
            default: components["responses"]["Unexpected"];
        };
    };
    fixScan: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The scan's id, as POST /api/v1/scans answered it. Another account's scan is 404 scan_not_found, as an unknown id is.
                 * @example scn_0f3a9c2b7e4d1a6c5b8e9f0a1d2c3b4e
                 */
                id: string;
            };
            cookie?: never;
        };
        /** @description The confirmation, and how to deliver */
        requestBody: {
            content: {
                "application/json": {
                    /** @description The number of images the fix marks (each one protect unit) */
                    confirm: number;
                    /** @description Push a branch instead of answering a zip (needs a token that may write) */
                    push?: boolean;
                    /** @description For the fetch of a private repository, and for the push */
                    token?: string | null;
                };
            };
        };
        responses: {
            /** @description With push: the branch pushed. Without: the zip. */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Content-Disposition": components["headers"]["Content-Disposition"];
                    "X-Optmark-Fix-Failed": components["headers"]["X-Optmark-Fix-Failed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        branch: string | null;
                        commit: string | null;
                        marked: {
                            path: string;
                            sha256: string;
                        }[];
                        failed: {
                            path: string;
                            reason: string;
                        }[];
                    };
                    "application/zip": Blob;
                };
            };
            /** @description The request is not what the operation takes: `malformed_request`, `invalid_option` */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "malformed_request" | "invalid_option";
                    };
                };
            };
            /** @description No valid API key: `missing_api_key`, `invalid_api_key` */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "missing_api_key" | "invalid_api_key";
                    };
                };
            };
            /** @description The key may not call this operation: `plan_not_allowed`, `scope_not_allowed` */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "plan_not_allowed" | "scope_not_allowed";
                    };
                };
            };
            /** @description Nothing of the account's was found: `scan_not_found` */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "scan_not_found";
                    };
                };
            };
            /** @description The scan is not in a state that allows it: `scan_not_finished` */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "scan_not_finished";
                    };
                };
            };
            /** @description The image, or a JSON body, is over its limit; the connection is closed: `body_too_large`, `image_too_large` */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "body_too_large" | "image_too_large";
                    };
                };
            };
            /** @description The body is not of the type the operation takes (multipart/form-data for an image, JSON for a scan), or the bytes are not JPEG, PNG or WebP: `unsupported_content_type` */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "unsupported_content_type";
                    };
                };
            };
            /** @description The monthly limit is reached (quota_exceeded: Retry-After is the seconds to the next UTC month; do not retry before), or too many calls at once or invalid keys from this address (too_many_requests: retry after Retry-After), or the account's failed calls cost too much work this minute (too_many_failed_calls: retry after Retry-After): `too_many_requests`, `quota_exceeded` */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "too_many_requests" | "quota_exceeded";
                    };
                };
            };
            /** @description The request headers are over 16 KiB; the connection is closed: `header_too_large` */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "header_too_large";
                    };
                };
            };
            /** @description The repository could not be fetched (again) from its server: `repository_unavailable` */
            502: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "repository_unavailable";
                    };
                };
            };
            /** @description The database is unavailable, the server is stopping or at capacity: retry after Retry-After; or new repository scans are paused for everyone (scans_paused: temporary, service-wide; Retry-After says when to try again): `service_unavailable`, `server_busy` */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "service_unavailable" | "server_busy";
                    };
                };
            };
            default: components["responses"]["Unexpected"];
        };
    };
    jwks: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A JWK Set */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Jwks"];
                };
            };
            /** @description The request is not what the operation takes: `malformed_request` */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "malformed_request";
                    };
                };
            };
            /** @description The request headers are over 16 KiB; the connection is closed: `header_too_large` */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "header_too_large";
                    };
                };
            };
            default: components["responses"]["Unexpected"];
        };
    };
    healthz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The process runs */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            /** @description The request is not what the operation takes: `malformed_request` */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "malformed_request";
                    };
                };
            };
            /** @description The request headers are over 16 KiB; the connection is closed: `header_too_large` */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "header_too_large";
                    };
                };
            };
            default: components["responses"]["Unexpected"];
        };
    };
    readyz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Ready to serve */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            /** @description The request is not what the operation takes: `malformed_request` */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "malformed_request";
                    };
                };
            };
            /** @description The request headers are over 16 KiB; the connection is closed: `header_too_large` */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "header_too_large";
                    };
                };
            };
            /** @description The database is unavailable, the server is stopping or at capacity: retry after Retry-After; or new repository scans are paused for everyone (scans_paused: temporary, service-wide; Retry-After says when to try again): `service_unavailable` */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "service_unavailable";
                    };
                };
            };
            default: components["responses"]["Unexpected"];
        };
    };
    openapi: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The OpenAPI document */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        openapi: string;
                        info: Record<string, never>;
                        paths: Record<string, never>;
                    };
                };
            };
            /** @description The request is not what the operation takes: `malformed_request` */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "malformed_request";
                    };
                };
            };
            /** @description The request headers are over 16 KiB; the connection is closed: `header_too_large` */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    Connection: components["headers"]["Connection"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "header_too_large";
                    };
                };
            };
            default: components["responses"]["Unexpected"];
        };
    };
}
