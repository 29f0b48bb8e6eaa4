package org.tent4j.api;

/**
 * A transport plugin as an engine sees it.
 *
 * @param id        canonical id, e.g. {@code tcp}
 * @param available whether it can run here
 * @param cause     why it cannot run here ({@code null} when available)
 * @param enabled   whether this engine runs it
 */
public record TransportInfo(String id, boolean available, String cause, boolean enabled) {
}
