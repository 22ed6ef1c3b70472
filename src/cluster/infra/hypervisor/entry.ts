// The script the add-on starts as the simulated hypervisor's own process
// (`entry.ts --dir DIR`): straight to its main, without the nodewarden
// command's dispatcher.
import { runDaemon } from '../kit/daemon.ts';
import { serveHypervisor } from './process-main.ts';

runDaemon('simulated hypervisor', serveHypervisor);
