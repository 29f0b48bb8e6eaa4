package org.tent4j.store.rpc;

import java.util.HexFormat;

/** For tests of other packages: whether a master's credentials accept a credential issued elsewhere. */
public final class CredentialCheck {
    private CredentialCheck() {
    }

    /** Whether {@code credentials} accepts {@code issued} as a client's header carries it (hex). */
    public static boolean accepts(ClientCredentials credentials, ClientCredentials.Issued issued) {
        return credentials.verify(issued.clientId(), HexFormat.of().formatHex(issued.credential()));
    }
}
