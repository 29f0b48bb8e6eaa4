package org.tent4j.integration.nixl;

/** Why an agent call failed (NIXL's negative status codes, as an enum). */
public enum NixlStatus {
    INVALID_PARAM, BACKEND, NOT_FOUND, MISMATCH, NOT_ALLOWED, REPOST_ACTIVE, NOT_SUPPORTED,
    /** The peer could not be reached or failed while a transfer was in flight; its metadata is kept. */
    REMOTE_DISCONNECT, CANCELED, TIMEOUT
}
