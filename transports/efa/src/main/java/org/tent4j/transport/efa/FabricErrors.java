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
            case FiAbi.FI_ECANCELED -> ErrorCode.CANCELED;
            case FiAbi.FI_EINVAL, FiAbi.FI_EMSGSIZE, FiAbi.FI_ETRUNC -> ErrorCode.INVALID_ARGUMENT;
            case FiAbi.FI_ENOMEM, FiAbi.FI_ENOSPC, FiAbi.FI_EAGAIN, FiAbi.FI_EOVERRUN -> ErrorCode.TOO_MANY_REQUESTS;
            case FiAbi.FI_ECONNREFUSED, FiAbi.FI_EHOSTUNREACH, FiAbi.FI_ENETUNREACH, FiAbi.FI_EHOSTDOWN,
                 FiAbi.FI_ENETDOWN, FiAbi.FI_EADDRNOTAVAIL, FiAbi.FI_ENOAV -> ErrorCode.PEER_UNREACHABLE;
            case FiAbi.FI_ENOSYS, FiAbi.FI_EOPNOTSUPP -> ErrorCode.TRANSPORT_UNAVAILABLE;
            // EIO, ECONNRESET, ECONNABORTED, EOTHER and anything unknown: the peer or the path failed
            default -> ErrorCode.PEER_FAILED;
        };
    }
}
