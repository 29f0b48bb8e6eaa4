package org.tent4j.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/** The version and the git commit this command line was built from (written by the build, git-commit-id plugin). */
public record BuildInfo(String version, String commit, boolean dirty) {
    private static final String RESOURCE = "tent4j-cli-git.properties";

    /** What the build recorded; "unknown" for what it could not (a build outside a git checkout). */
    public static BuildInfo current() {
        Properties p = new Properties();
        try (InputStream in = BuildInfo.class.getResourceAsStream(RESOURCE)) {
            if (in != null) {
                p.load(in);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + RESOURCE, e);
        }
        return new BuildInfo(p.getProperty("git.build.version", "unknown"), p.getProperty("git.commit.id.abbrev", "unknown"),
                Boolean.parseBoolean(p.getProperty("git.dirty", "false")));
    }

    /** {@code tent4j 0.1.0-SNAPSHOT (commit a2182b7)}, with {@code -dirty} when built from uncommitted changes. */
    @Override
    public String toString() {
        return "tent4j " + version + " (commit " + commit + (dirty ? "-dirty" : "") + ")";
    }
}
