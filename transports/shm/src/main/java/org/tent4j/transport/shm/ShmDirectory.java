package org.tent4j.transport.shm;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The directory shared-memory files live in (normally the tmpfs at {@code /dev/shm}): whether it is usable, how
 * files in it are named, and removal of files whose owner died without cleaning up.
 *
 * <p>Files are named {@code tent4j-<pid>-<segment tag>-<random>}, the tag being a hash of the name of the segment
 * whose allocator made the file. A peer's file is mapped only when it lies directly in this directory, its name has
 * this shape and carries the tag of the segment that publishes it, and it is a regular file (not a link) owned by
 * this user: so a forged descriptor can point this process neither at an arbitrary file of its own (say
 * {@code ~/.bashrc}) nor at another engine's buffer, published or LOCAL_ONLY.
 */
final class ShmDirectory {
    private static final Logger LOG = LoggerFactory.getLogger(ShmDirectory.class);
    private static final Pattern FILE_NAME = Pattern.compile("tent4j-(\\d{1,10})-([0-9a-f]{16})-([0-9a-f]{16})");
    /**
     * A file younger than this is never swept: its owner may have created it and not yet taken its lock.
     */
    static final Duration SWEEP_MIN_AGE = Duration.ofSeconds(60);

    /** This process's real uid: peers' files must have it, as the files this process creates do. */
    static final long PROCESS_UID = new com.sun.security.auth.module.UnixSystem().getUid();

    private static final SecureRandom RANDOM = new SecureRandom();

    private final Path dir;

    ShmDirectory(Path dir) {
        this.dir = dir.toAbsolutePath().normalize();
    }

    Path path() {
        return dir;
    }

    /**
     * Checks that files can be created here; the exception message is the precise unavailability cause.
     */
    static void probe(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            throw new IOException("shm directory " + dir + " does not exist");
        }
        if (!Files.isDirectory(dir)) {
            throw new IOException("shm directory " + dir + " is not a directory");
        }
        if (!Files.isWritable(dir)) {
            throw new IOException("shm directory " + dir + " is not writable by this process (user "
                    + System.getProperty("user.name") + ")");
        }
        Path probe = dir.resolve("tent4j-probe-" + ProcessHandle.current().pid() + "-" + randomSuffix());
        try {
            Files.createFile(probe);
        } catch (IOException e) {
            throw new IOException("cannot create files in shm directory " + dir + ": " + e, e);
        } finally {
            Files.deleteIfExists(probe);
        }
    }

    /**
     * Whether the directory is a memory file system (tmpfs, hugetlbfs). Only there is populating a writable mapping
     * free of side effects; on a disk file system it would dirty every page for writeback.
     */
    boolean inMemory() {
        try {
            String type = Files.getFileStore(dir).type();
            return type.equals("tmpfs") || type.equals("hugetlbfs");
        } catch (IOException e) {
            return false;
        }
    }

    /** A fresh, unused file name for this process's segment {@code segmentName}. */
    Path newFilePath(String segmentName) {
        return dir.resolve("tent4j-" + ProcessHandle.current().pid() + "-" + segmentTag(segmentName) + "-"
                + randomSuffix());
    }

    /** Whether {@code path} names a file some tent4j allocator made (by shape: absolute, normalized, our name). */
    static boolean isShmFilePath(Path path) {
        if (!path.isAbsolute() || !path.equals(path.normalize()) || path.getFileName() == null) {
            return false;
        }
        return FILE_NAME.matcher(path.getFileName().toString()).matches();
    }

    /**
     * Checks, by name alone, that {@code path} may be mapped for segment {@code segmentName}: a tent4j file directly
     * in this directory that the allocator of that segment named. What the file is (regular, owner) is checked when
     * it is opened.
     *
     * @return {@code null} when it may, else why not (for an error message)
     */
    String refusal(Path path, String segmentName) {
        if (!isShmFilePath(path)) {
            return "it is not a tent4j shm file (expected an absolute " + dir + "/tent4j-<pid>-<tag>-<hex>)";
        }
        if (!dir.equals(path.getParent())) {
            return "it is outside this engine's shm directory " + dir;
        }
        Matcher m = FILE_NAME.matcher(path.getFileName().toString());
        if (!m.matches() || !m.group(2).equals(segmentTag(segmentName))) {
            return "segment '" + segmentName + "' did not create it (its name carries another segment's tag)";
        }
        return null;
    }

    /** Eight bytes of SHA-256 of the segment name, in hex: names that differ get different tags. */
    static String segmentTag(String segmentName) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(segmentName.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }

    /**
     * Deletes files left by processes that died without cleaning up (SIGKILL, OOM killer, power loss of a
     * container). A file is stale only if all of these hold: its name has our shape, its pid is not a live process
     * here, it is older than {@link #SWEEP_MIN_AGE}, and no one holds an {@code flock} on it (every live owner holds
     * a shared one). The pid test alone is not enough: containers sharing a tmpfs see different pid namespaces.
     *
     * @return how many files were removed
     */
    int sweepStaleFiles() {
        if (!LibC.isAvailable()) {
            LOG.debug("not sweeping {}: without flock a live owner cannot be told from a dead one ({})", dir,
                    LibC.unavailabilityCause());
            return 0;
        }
        int removed = 0;
        Instant cutoff = Instant.now().minus(SWEEP_MIN_AGE);
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir, "tent4j-*")) {
            for (Path file : entries) {
                if (isStale(file, cutoff) && removeIfUnlocked(file)) {
                    removed++;
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("sweeping stale shm files in {} failed: {}", dir, e.toString());
        }
        if (removed > 0) {
            LOG.info("removed {} stale shm file(s) left in {} by processes that are gone", removed, dir);
        }
        return removed;
    }

    private static boolean isStale(Path file, Instant cutoff) throws IOException {
        Matcher m = FILE_NAME.matcher(file.getFileName().toString());
        if (!m.matches()) {
            return false;
        }
        long pid = Long.parseLong(m.group(1));
        if (ProcessHandle.of(pid).isPresent()) {
            return false;
        }
        BasicFileAttributes attrs;
        try {
            attrs = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException gone) {
            return false;
        }
        return attrs.isRegularFile() && attrs.lastModifiedTime().toInstant().isBefore(cutoff);
    }

    private static boolean removeIfUnlocked(Path file) {
        int fd;
        try {
            fd = LibC.open(file, LibC.O_RDWR | LibC.O_CLOEXEC, 0);
        } catch (IOException notOurs) {
            return false; // another user's file, or already gone
        }
        try {
            if (!LibC.flock(fd, LibC.LOCK_EX | LibC.LOCK_NB, file)) {
                return false;
            }
            // Holding the exclusive lock: no live owner can have it, and a racing sweeper waits or fails.
            boolean deleted = Files.deleteIfExists(file);
            if (deleted) {
                LOG.debug("removed stale shm file {}", file);
            }
            return deleted;
        } catch (IOException e) {
            LOG.debug("could not remove stale shm file {}: {}", file, e.toString());
            return false;
        } finally {
            LibC.closeQuietly(fd);
        }
    }

    private static String randomSuffix() {
        return HexFormat.of().toHexDigits(RANDOM.nextLong());
    }
}
