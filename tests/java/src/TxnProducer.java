import java.util.Properties;
import java.util.concurrent.Future;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * TxnProducer writes records in one Kafka transaction, for kiggy's interop
 * suite (tests/interop), which compiles it with javac against tests/java/lib.
 *
 * <pre>java -cp DIR:tests/java/lib/* TxnProducer BOOTSTRAP TOPIC TRANSACTIONAL_ID COUNT [COMPRESSION]</pre>
 *
 * Record i has key "key-i" and value "value-i", sent to partition 0, in
 * batches compressed with COMPRESSION (compression.type; none when left
 * out).
 * Every wait is bounded (max.block.ms 15 s), so a gateway that refuses or
 * ignores transactions ends the program instead of hanging it.
 *
 * Prints one result line on stdout and exits with:
 * 0 "committed N records"; 2 usage; 3 "initTransactions failed: ...";
 * 4 "transaction failed: ..." (after initTransactions succeeded).
 */
public final class TxnProducer {
    private TxnProducer() {}

    public static void main(String[] args) {
        if (args.length != 4 && args.length != 5) {
            System.out.println("usage: TxnProducer BOOTSTRAP TOPIC TRANSACTIONAL_ID COUNT [COMPRESSION]");
            System.exit(2);
        }
        String topic = args[1];
        int count = Integer.parseInt(args[3]);

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, args[2]);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "kiggy-interop-txn");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000");
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, args.length == 5 ? args[4] : "none");

        KafkaProducer<String, String> producer = new KafkaProducer<>(props);
        try {
            producer.initTransactions();
        } catch (Exception e) {
            System.out.println("initTransactions failed: " + describe(e));
            System.out.flush();
            // exit without close(): close() would wait on the same broker.
            Runtime.getRuntime().halt(3);
        }
        try {
            producer.beginTransaction();
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, 0, "key-" + i, "value-" + i)));
            }
            producer.commitTransaction();
            for (Future<RecordMetadata> f : sent) {
                f.get();
            }
        } catch (Exception e) {
            System.out.println("transaction failed: " + describe(e));
            System.out.flush();
            Runtime.getRuntime().halt(4);
        }
        producer.close();
        System.out.println("committed " + count + " records");
    }

    /** describe names an exception and its causes with their messages. */
    private static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (sb.length() > 0) {
                sb.append(" <- caused by ");
            }
            sb.append(c.getClass().getName()).append(": ").append(c.getMessage());
            if (c.getCause() == c) {
                break;
            }
        }
        return sb.toString();
    }
}
