package org.tent4j.transport.shm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Whether the shm files in a directory get huge pages, read from the mount table and the kernel's shmem policy.
 *
 * <p>It matters because every process that maps a peer's file takes a fault on its first write to each of its pages,
 * however the owner populated them: cheap where the hardware walks the page tables, 14-17 µs per 4 KiB page on a
 * virtual machine with shadow page tables (measured on a 2-vCPU EPYC VM, where a fresh store client's first puts were
 * bound by it). With 2 MiB pages that is one fault per 512 pages. A segment is allocated whole with {@code fallocate} before any
 * mapping exists, so only a tmpfs mounted {@code huge=within_size} or {@code huge=always} (or the kernel's
 * {@code shmem_enabled=force}) gives it huge pages; {@code huge=advise} does not, as no advice precedes the allocation.
 *
 * @param huge whether files created in the directory now are backed by huge pages
 * @param reason the mount and setting that decide it, for a log line
 */
record HugePages(boolean huge, String reason) {
    static final Path MOUNTS = Path.of("/proc/mounts");
    static final Path SHMEM_ENABLED = Path.of("/sys/kernel/mm/transparent_hugepage/shmem_enabled");

    /** The verdict for {@code dir} on this machine. */
    static HugePages of(Path dir) {
        return of(dir, MOUNTS, SHMEM_ENABLED);
    }

    static HugePages of(Path dir, Path mounts, Path shmemEnabled) {
        List<String> lines;
        try {
            lines = Files.readAllLines(mounts);
        } catch (IOException e) {
            return new HugePages(false, "cannot read " + mounts + ": " + e.getMessage());
        }
        Path target = dir.toAbsolutePath().normalize();
        String[] best = null;
        Path bestPoint = null;
        for (String line : lines) {
            String[] f = line.split(" ");
            if (f.length < 4) {
                continue;
            }
            Path point = Path.of(unescape(f[1]));
            // the longest mount point above dir; of equal ones the last, which is mounted over the others
            if (target.startsWith(point) && (bestPoint == null || point.getNameCount() >= bestPoint.getNameCount())) {
                best = f;
                bestPoint = point;
            }
        }
        if (best == null) {
            return new HugePages(false, dir + " is on no mount listed in " + mounts);
        }
        String where = best[2] + " " + bestPoint;
        if (best[2].equals("hugetlbfs")) {
            return new HugePages(true, where);
        }
        if (!best[2].equals("tmpfs")) {
            return new HugePages(false, where + " is not a memory file system");
        }
        String huge = "never";
        for (String option : best[3].split(",")) {
            if (option.startsWith("huge=")) {
                huge = option.substring("huge=".length());
            }
        }
        String policy = shmemPolicy(shmemEnabled);
        if (policy.equals("deny")) {
            return new HugePages(false, where + ": " + shmemEnabled + " is deny");
        }
        if (policy.equals("force")) {
            return new HugePages(true, where + ": " + shmemEnabled + " is force");
        }
        return switch (huge) {
            case "always", "within_size" -> new HugePages(true, where + " mounted huge=" + huge);
            case "advise" -> new HugePages(false, where + " mounted huge=advise, which segments allocated before they are "
                    + "mapped do not take");
            default -> new HugePages(false, where + " mounted huge=" + huge);
        };
    }

    /** The bracketed choice in the kernel's shmem_enabled, or "" where the file is absent or unreadable. */
    private static String shmemPolicy(Path file) {
        try {
            String s = Files.readString(file);
            int open = s.indexOf('[');
            int close = s.indexOf(']', open + 1);
            return open >= 0 && close > open ? s.substring(open + 1, close) : "";
        } catch (IOException e) {
            return "";
        }
    }

    /** Mount points in the mount table escape space, tab, newline and backslash as octal. */
    private static String unescape(String s) {
        if (s.indexOf('\\') < 0) {
            return s;
        }
        StringBuilder b = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && i + 3 < s.length() && s.substring(i + 1, i + 4).chars().allMatch(d -> d >= '0' && d <= '7')) {
                b.append((char) Integer.parseInt(s.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }
}
