package org.tent4j.spi;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;

/**
 * The local engine's registrations, for the target side of a transport: every byte a peer asks for must be checked
 * here before it is touched.
 */
public interface LocalMemory {
    /**
     * The registered buffer holding {@code [address, address + length)}, or {@code null}. Allocation-free and
     * non-blocking, so an I/O thread may call it per request.
     *
     * @param address an address in this process
     * @param length  bytes
     * @return the one buffer holding the whole range, or {@code null}; a buffer being unregistered is already gone
     */
    LocalBuffer find(long address, long length);

    /**
     * Checks that a peer may perform {@code remoteOp} (as the peer names it: its READ reads this memory, its WRITE
     * writes it) on {@code [address, address + length)}.
     *
     * @param address  the address the peer sent, unchecked
     * @param length   the length the peer sent, unchecked
     * @param remoteOp the peer's opcode

     * @return the buffer holding the range
     * @throws TransferException OUT_OF_BOUNDS, ADDRESS_NOT_REGISTERED, PERMISSION_DENIED or INVALID_ARGUMENT
     *                           (zero, negative or overflowing length), with a message naming address and length
     */
    default LocalBuffer checkRemoteAccess(long address, long length, Opcode remoteOp) {
        if (length <= 0) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "peer " + remoteOp + " of " + range(address, length)
                    + ": length must be > 0");
        }
        if (address + length < address) {
            throw new TransferException(ErrorCode.OUT_OF_BOUNDS, "peer " + remoteOp + " of " + range(address, length)
                    + ": address + length overflows");
        }
        LocalBuffer buffer = find(address, length);
        if (buffer == null) {
            LocalBuffer start = find(address, 1);
            if (start != null) {
                throw new TransferException(ErrorCode.OUT_OF_BOUNDS, "peer " + remoteOp + " of " + range(address, length)
                        + " runs past the end of registered buffer " + range(start.address(), start.length()));
            }
            throw new TransferException(ErrorCode.ADDRESS_NOT_REGISTERED, "peer " + remoteOp + " of " + range(address, length)
                    + ": address is not in any registered buffer");
        }
        if (!buffer.permission().allowsRemote(remoteOp)) {
            throw new TransferException(ErrorCode.PERMISSION_DENIED, "peer " + remoteOp + " of " + range(address, length)
                    + " denied: buffer is " + buffer.permission());
        }
        return buffer;
    }

    /** {@code [0xADDRESS, +LENGTH)}, built only for messages so the success path allocates nothing. */
    private static String range(long address, long length) {
        return "[0x" + Long.toHexString(address) + ", +" + length + ")";
    }
}
