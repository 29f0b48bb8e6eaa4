package org.tent4j.cli.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.store.StoreSecurity;

/**
 * Every store command's token and TLS files: the option, else the engine's environment variables (issue 29: "on the
 * master and in every store command (--token-file, environment)"), the token file before the inline token.
 */
class SecurityOptionsTest {
    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void theOptionWinsThenTheEnvironmentsTokenFileThenItsInlineToken(@TempDir Path dir) throws Exception {
        Path optionFile = Files.writeString(dir.resolve("option-token"), "from-option\n");
        Path envFile = Files.writeString(dir.resolve("env-token"), "from-env-file\n");
        Map<String, String> env = Map.of("TENT4J_SECURITY_TOKEN_FILE", envFile.toString(),
                "TENT4J_SECURITY_TOKEN", "from-env-inline",
                "TENT4J_SECURITY_TLS_CERTIFICATE", "/certs/node.pem",
                "TENT4J_SECURITY_TLS_PRIVATE_KEY", "/certs/node.key",
                "TENT4J_SECURITY_TLS_TRUSTED_CERTIFICATES", "/certs/cluster.pem");

        SecurityOptions withOption = new SecurityOptions();
        withOption.tokenFile = optionFile;
        assertArrayEquals(utf8("from-option"), withOption.security(env).token());

        StoreSecurity fromEnv = new SecurityOptions().security(env);
        assertArrayEquals(utf8("from-env-file"), fromEnv.token());
        assertEquals(Path.of("/certs/node.pem"), fromEnv.tlsCertificate());
        assertEquals(Path.of("/certs/node.key"), fromEnv.tlsPrivateKey());
        assertEquals(Path.of("/certs/cluster.pem"), fromEnv.tlsTrustedCertificates());

        assertArrayEquals(utf8("from-env-inline"),
                new SecurityOptions().security(Map.of("TENT4J_SECURITY_TOKEN", "from-env-inline")).token());

        StoreSecurity none = new SecurityOptions().security(Map.of());
        assertNull(none.token());
        assertFalse(none.authenticates() || none.tls());
    }
}
