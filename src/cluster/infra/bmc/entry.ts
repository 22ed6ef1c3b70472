// The script the add-on starts as the BMC fleet's own process
// (`entry.ts --dir DIR`): straight to its main, without the nodewarden
// command's dispatcher (and its Kubernetes client: the fleet needs none).
import { runDaemon } from '../kit/daemon.ts';
import { serveBmcFleet } from './process-main.ts';

runDaemon('simulated BMC fleet', serveBmcFleet);
