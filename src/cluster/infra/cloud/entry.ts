// The script the add-on starts as the simulated cloud's own process
// (`entry.ts --dir DIR`): straight to its main, without the nodewarden
// command's dispatcher.
import { runDaemon } from '../kit/daemon.ts';
import { serveCloud } from './process-main.ts';

runDaemon('simulated cloud', serveCloud);
