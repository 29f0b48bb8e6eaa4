package org.tent4j.spi;

import java.lang.foreign.MemorySegment;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;

/**
 * The engine's registered files, for the target side of a network transport that serves a peer's requests for them
 * (remote file segments): the target checks the range here, then reads or writes the file on the peer's behalf
 * through {@link #read}/{@link #write}. The engine owns the files' I/O, so a network transport never needs a file
 * transport of its own. Files live at or above {@link #FILE_SPACE} in the segment's address space.
 */
public interface LocalFiles {
    /** No files: what a context without file segments hands out. */
    LocalFiles NONE = new LocalFiles() {
        @Override
        public LocalFile find(long address, long length) {
            return null;
        }

        @Override
        public void read(LocalFile file, long address, MemorySegment into) {
            throw new TransferException(ErrorCode.ADDRESS_NOT_REGISTERED, "no file segments here");
        }

        @Override
        public void write(LocalFile file, long address, MemorySegment from) {
            throw new TransferException(ErrorCode.ADDRESS_NOT_REGISTERED, "no file segments here");
        }
    };

    /** Lowest address a file can have; anything below is memory. */
    long FILE_SPACE = 1L << 60;

    /**
     * Whether {@code address} lies in the file part of the address space (a cheap test before any lookup).
     *
     * @param address a segment address
     * @return {@code address >= FILE_SPACE}
     */
    static boolean inFileSpace(long address) {
        return address >= FILE_SPACE;
    }

    /**
     * The registered file holding {@code [address, address + length)}, or {@code null}. Allocation-free.
     *
     * @param address a segment address
     * @param length  bytes
     * @return the one file holding the whole range, or {@code null}
     */
    LocalFile find(long address, long length);

    /**
     * Checks that a peer may perform {@code remoteOp} (as the peer names it) on {@code [address, address + length)}.
     *
     * @param address  the segment address the peer sent, unchecked
     * @param length   the length the peer sent, unchecked
     * @param remoteOp the peer's opcode: READ reads the file, WRITE writes it
     * @return the file holding the range
     * @throws TransferException INVALID_ARGUMENT, ADDRESS_NOT_REGISTERED, OUT_OF_BOUNDS or PERMISSION_DENIED, naming
     *                           the file, the offset in it and the length
     */
    default LocalFile checkRemoteAccess(long address, long length, Opcode remoteOp) {
        if (length <= 0) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "peer " + remoteOp + " of " + length
                    + " bytes at 0x" + Long.toHexString(address) + ": length must be > 0");
        }
        LocalFile file = find(address, length);
        if (file == null) {
            LocalFile start = find(address, 1);
            if (start != null) {
                throw new TransferException(ErrorCode.OUT_OF_BOUNDS, "peer " + remoteOp + " of file " + start.path()
                        + " at offset " + (address - start.address()) + ", length " + length + " runs past its end ("
                        + start.length() + " bytes registered)");
            }
            throw new TransferException(ErrorCode.ADDRESS_NOT_REGISTERED, "peer " + remoteOp + " of " + length
                    + " bytes at 0x" + Long.toHexString(address) + ": address is in no registered file");
        }
        if (!file.permission().allowsRemote(remoteOp)) {
            throw new TransferException(ErrorCode.PERMISSION_DENIED, "peer " + remoteOp + " of file " + file.path()
                    + " at offset " + (address - file.address()) + ", length " + length + " denied: file is "
                    + file.permission());
        }
        return file;
    }

    /**
     * Reads {@code into.byteSize()} bytes of {@code file} starting at segment address {@code address} into
     * {@code into}; blocks until done. The range must have passed {@link #checkRemoteAccess}. Call it on a worker
     * thread, never on an I/O event loop.
     *
     * @param file    the file {@link #checkRemoteAccess} returned
     * @param address the segment address to start at
     * @param into    memory to fill, owned by the caller
     * @throws TransferException naming the file, offset and length when the I/O fails, the file was unregistered, or
     *                           the file is now shorter than its registration
     */
    void read(LocalFile file, long address, MemorySegment into);

    /**
     * Writes {@code from} into {@code file} at segment address {@code address}; returns once the bytes are in the
     * file (the page cache; not necessarily on the device). Blocks: call it on a worker thread.
     *
     * @param file    the file {@link #checkRemoteAccess} returned
     * @param address the segment address to start at
     * @param from    the bytes to write, owned by the caller

     * @throws TransferException naming the file, offset and length when the I/O fails or the file was unregistered
     */
    void write(LocalFile file, long address, MemorySegment from);
}
