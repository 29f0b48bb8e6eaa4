package org.tent4j.transport.efa;

import org.tent4j.api.ErrorCode;

/** Which {@link ErrorCode} a libfabric error number (from a post or a CQ error entry) becomes. */
final class FabricErrors {
    private FabricErrors() {
    }

    /** @param err a libfabric error number, positive or negative */
    static ErrorCode code(long err) {
        int e = (int) Math.abs(err);
        return switch (e) {
            // the target's MR rejected the key, the range or the access
            case FiAbi.FI_EACCES, FiAbi.FI_EPERM, FiAbi.FI_ENOKEY, FiAbi.FI_EFAULT -> ErrorCode.PERMISSION_DENIED;
            case FiAbi.FI_ETIMEDOUT -> ErrorCode.TIMEOUT;
            case FiAbi.FI_EINVAL, FiAbi.FI_EMSGSIZE, FiAbi.FI_ETRUNC -> ErrorCode.INVALID_ARGUMENT;
            case FiAbi.FI_ENOMEM, FiAbi.FI_ENOSPC, FiAbi.FI_EAGAIN, FiAbi.FI_EOVERRUN -> ErrorCode.TOO_MANY_REQUESTS;
            case FiAbi.FI_ECONNREFUSED, FiAbi.FI_EHOSTUNREACH, FiAbi.FI_ENETUNREACH, FiAbi.FI_EHOSTDOWN,
                 FiAbi.FI_ENETDOWN, FiAbi.FI_EADDRNOTAVAIL, FiAbi.FI_ENOAV -> ErrorCode.PEER_UNREACHABLE;
            case FiAbi.FI_ENOSYS, FiAbi.FI_EOPNOTSUPP -> ErrorCode.TRANSPORT_UNAVAILABLE;
            // ECANCELED: this transport never cancels an operation whose slice it still owns, so the provider
            // aborted it; tcp does that when the target rejects the key or range (it drops the connection).
            // EIO, ECONNRESET, ECONNABORTED, EOTHER and anything unknown: the peer or the path failed.
            default -> ErrorCode.PEER_FAILED;
        };
    }

    /** A hint appended to the message of an error completion, or "". */
    static String hint(int err) {
        return switch (err) {
            case FiAbi.FI_ECANCELED -> "; the provider aborted the operation (tcp does so when the target rejects "
                    + "its key or range, and drops the connection), or the connection to the peer failed";
            case FiAbi.FI_EACCES, FiAbi.FI_EPERM, FiAbi.FI_ENOKEY -> "; the target's memory region refused the key, "
                    + "range or access";
            default -> "";
        };
    }
}
