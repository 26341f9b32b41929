import { Provider } from '@nestjs/common';
import { CommandContext } from '../command-context';
import { NonceStore } from './nonce-store';
import { ParticipantDirectory } from './participant-directory';
import { RejectionRecorder } from './rejection-recorder';

/**
 * What a service that takes commands registers in its module to authenticate and authorize
 * them: `providers: [...authProviders, ...]`, then inject CommandContext (and RejectionRecorder
 * to record refusals for the audit log).
 */
export const authProviders: Provider[] = [ParticipantDirectory, NonceStore, RejectionRecorder, CommandContext];
