package org.tent4j.transport.shm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.Files;
import java.util.Map;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;

/**
 * A peer's buffer mapped into this process: the bytes of {@code [offset, offset + length)} of its shm file, mapped
 * read-only when the peer allows only READ. Identified by the buffer's address and path, the two things that change
 * when a peer frees a buffer and registers another.
 */
final class RemoteMapping {
    private static final Logger LOG = LoggerFactory.getLogger(RemoteMapping.class);

    private static final OpenOption[] READ_ONLY = {StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS};
    private static final OpenOption[] READ_WRITE = {StandardOpenOption.READ, StandardOpenOption.WRITE,
            LinkOption.NOFOLLOW_LINKS};

    final long address;
    final long length;
    final String path;
    final Permission permission;
    final MemorySegment segment;
    private final Arena arena;
    private final Prefaulter.Prefault prefault;

    private RemoteMapping(long address, long length, String path, Permission permission, MemorySegment segment,
                          Arena arena, Prefaulter prefaulter) {
        this.address = address;
        this.length = length;
        this.path = path;
        this.permission = permission;
        this.segment = segment;
        this.arena = arena;
        this.prefault = prefaulter.start(segment, permission == Permission.READ_WRITE, path);
    }

    /** Whether this mapping is the one for {@code buffer} as currently published. Allocation-free. */
    boolean matches(BufferDescriptor buffer) {
        return buffer.address() == address && buffer.length() == length && buffer.permission() == permission
                && path.equals(buffer.attributes(ShmTransportProvider.ID).get(ShmAllocator.PATH));
    }

    /**
     * Maps {@code buffer} of segment {@code segmentName}.
     *
     * @throws TransferException PEER_FAILED when the file is missing or cannot be mapped, PERMISSION_DENIED for a
     *                           LOCAL_ONLY buffer, PROTOCOL when the published attributes are malformed
     */
    static RemoteMapping map(ShmDirectory directory, Prefaulter prefaulter, String segmentName, BufferDescriptor buffer) {
        String where = "buffer [0x" + Long.toHexString(buffer.address()) + ", +" + buffer.length() + ") of segment '"
                + segmentName + "'";
        if (buffer.permission() == Permission.LOCAL_ONLY) {
            throw new TransferException(ErrorCode.PERMISSION_DENIED, where + " is LOCAL_ONLY; shm will not map it");
        }
        Map<String, String> attrs = buffer.attributes(ShmTransportProvider.ID);
        String pathText = attrs.get(ShmAllocator.PATH);
        if (pathText == null) {
            throw new TransferException(ErrorCode.PEER_FAILED, where + " publishes no shm path (it was not allocated "
                    + "by the peer's shm transport)");
        }
        Path path;
        try {
            path = Path.of(pathText);
        } catch (InvalidPathException e) {
            throw new TransferException(ErrorCode.PROTOCOL, where + " publishes an invalid shm path '" + pathText + "'");
        }
        String refusal = directory.refusal(path, segmentName);
        if (refusal != null) {
            throw new TransferException(ErrorCode.PROTOCOL, where + " publishes shm path '" + pathText + "', but "
                    + refusal + "; refusing to map it");
        }
        long size = parse(attrs, ShmAllocator.SIZE, -1, where);
        long offset = parse(attrs, ShmTransport.OFFSET, 0, where);
        if (size != buffer.length()) {
            throw new TransferException(ErrorCode.PROTOCOL, where + " publishes shm size " + size + " for shm file "
                    + path + ", but the buffer is " + buffer.length() + " bytes");
        }
        boolean writable = buffer.permission() == Permission.READ_WRITE;
        Arena arena = Arena.ofShared();
        try {
            PosixFileAttributes attributes = Files.readAttributes(path, PosixFileAttributes.class,
                    LinkOption.NOFOLLOW_LINKS);
            if (!attributes.isRegularFile()) {
                throw new TransferException(ErrorCode.PROTOCOL, "shm file " + path + " of " + where
                        + " is not a regular file (a link or special file); refusing to map it");
            }
            Object owner = Files.getAttribute(path, "unix:uid", LinkOption.NOFOLLOW_LINKS);
            if (!(owner instanceof Integer uid) || uid.longValue() != ShmDirectory.PROCESS_UID) {
                throw new TransferException(ErrorCode.PROTOCOL, "shm file " + path + " of " + where
                        + " is owned by uid " + owner + " (" + attributes.owner().getName() + "), not by this "
                        + "process's uid " + ShmDirectory.PROCESS_UID + "; refusing to map it");
            }
            try (FileChannel ch = FileChannel.open(path, writable ? READ_WRITE : READ_ONLY)) {
                long fileSize = ch.size();
                if (offset < 0 || offset > fileSize - buffer.length()) {
                    throw new TransferException(ErrorCode.PEER_FAILED, "shm file " + path + " of " + where + " is "
                            + fileSize + " bytes, too short for the published range [" + offset + ", +"
                            + buffer.length() + ")");
                }
                MemorySegment segment = ch.map(writable ? FileChannel.MapMode.READ_WRITE : FileChannel.MapMode.READ_ONLY,
                        offset, buffer.length(), arena);
                LOG.debug("mapped {} {} of {}", writable ? "read-write" : "read-only", path, where);
                return new RemoteMapping(buffer.address(), buffer.length(), pathText, buffer.permission(), segment,
                        arena, prefaulter);
            }
        } catch (NoSuchFileException e) {
            arena.close();
            throw new TransferException(ErrorCode.PEER_FAILED, "shm file " + path + " of " + where
                    + " does not exist (the peer released the buffer or exited)", e);
        } catch (IOException | RuntimeException e) {
            arena.close();
            if (e instanceof TransferException te) {
                throw te;
            }
            throw new TransferException(ErrorCode.PEER_FAILED, "cannot map shm file " + path + " of " + where + " "
                    + (writable ? "read-write" : "read-only") + ": " + e, e);
        }
    }

    /** Unmaps; a copy still running on it fails with {@link IllegalStateException}, which its slice reports. */
    void unmap() {
        prefault.stop();
        try {
            arena.close();
            LOG.debug("unmapped {}", path);
        } catch (IllegalStateException e) {
            LOG.debug("{} was already unmapped: {}", path, e.toString());
        }
    }

    private static long parse(Map<String, String> attrs, String key, long absent, String where) {
        String text = attrs.get(key);
        if (text == null) {
            if (absent < 0) {
                throw new TransferException(ErrorCode.PROTOCOL, where + " publishes no shm '" + key + "'");
            }
            return absent;
        }
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new TransferException(ErrorCode.PROTOCOL, where + " publishes shm '" + key + "' = '" + text
                    + "', which is not a number");
        }
    }
}
