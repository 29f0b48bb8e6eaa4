package org.tent4j.api;

import java.nio.file.Path;

/**
 * A file or block device registered with an engine as part of its segment ({@link TransferEngine#registerFile}).
 *
 * <p>A segment holds memory and files side by side. Each file occupies its own range of the segment's address space,
 * starting at {@link #address()}, far above any memory address, so a request reaches byte {@code o} of the file with
 * {@code targetOffset = address() + o}, exactly as it reaches a registered memory buffer. Peers see the file in
 * {@link SegmentInfo#buffers()} with location {@code file:0} and the same address.
 *
 * <p>The local side of a request is always memory; the file is always the target.
 */
public interface RegisteredFile {
    /**
     * The file as registered (absolute, normalized).
     *
     * @return the path
     */
    Path path();

    /**
     * Base of the file's range in the segment's address space; byte {@code o} of the file is {@code address() + o}.
     *
     * @return the base address
     */
    long address();

    /**
     * Bytes of the file that requests may address.
     *
     * @return the registered size
     */
    long length();

    /**
     * Which requests may address the file: READ_ONLY allows READs, READ_WRITE both. As for memory on the engine's own
     * segment, this holds for the engine's own requests too; LOCAL_ONLY is refused at registration, since a file is
     * only ever a target.
     *
     * @return READ_ONLY or READ_WRITE
     */

    Permission permission();
}
