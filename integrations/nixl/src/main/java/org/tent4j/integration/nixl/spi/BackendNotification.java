package org.tent4j.integration.nixl.spi;

/** A notification a backend received: the sending agent's name and the message. */
public record BackendNotification(String agent, byte[] message) {
}
